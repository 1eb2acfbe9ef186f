-- The channels' ids of the messages accepted (chat.Inbound.ID), kept for
-- chat.MaxSeenAge after their inbox row went, so that a message a channel
-- hands over again (a Telegram update fetched again after a crash, a Matrix
-- sync batch replayed) is accepted once. IF NOT EXISTS: the Matrix
-- channel's migration that moves its old handled-events table here may
-- create it first (outside the app, in its own tests).
CREATE TABLE IF NOT EXISTS router_seen (
    channel    TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    seen_at    INTEGER NOT NULL, -- Unix milliseconds
    PRIMARY KEY (channel, message_id)
);
CREATE INDEX IF NOT EXISTS router_seen_at ON router_seen (seen_at);
