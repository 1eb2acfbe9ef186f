-- Per-conversation voice reply mode, set with /voice: off, when_spoken_to
-- or always. A conversation without a row follows voice.channel_replies,
-- then voice.replies.
CREATE TABLE voice_replies (
    thread     TEXT    PRIMARY KEY,
    mode       TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
