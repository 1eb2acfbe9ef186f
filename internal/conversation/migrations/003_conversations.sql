-- Conversations people manage (issue 16): a deleted thread is archived
-- (restorable), a user-set title is kept, a reply that failed or was
-- stopped stays with its mark, and the conversation a /new closed or the
-- turns an edit or a regeneration replaced are kept as archived segments,
-- readable and searchable.

-- archived_at: set when the thread is deleted (hidden from the list,
-- restorable). title_source: '' (the first line of the first message),
-- 'model' (generated) or 'user' (renamed; never overwritten).
ALTER TABLE threads ADD COLUMN archived_at INTEGER;
ALTER TABLE threads ADD COLUMN title_source TEXT NOT NULL DEFAULT '';

-- A segment is a run of a thread's messages taken out of the active
-- history together: kind 'conversation' (closed by /new; title is the
-- thread's title then) or 'branch' (replaced by an edit or a regeneration;
-- after_message_id is the active message it followed, 0 for none).
CREATE TABLE segments (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id         TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    kind              TEXT    NOT NULL,
    title             TEXT    NOT NULL DEFAULT '',
    after_message_id  INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL
);
CREATE INDEX segments_thread ON segments (thread_id, id);

-- segment: the segment an archived message belongs to (NULL for active
-- messages and for those compaction archived). status: '' for a normal
-- message, 'failed' or 'stopped' for an assistant reply that did not
-- finish (its text is what was written; note says what happened). Marked
-- messages are shown, never sent to the model.
ALTER TABLE messages ADD COLUMN segment INTEGER;
ALTER TABLE messages ADD COLUMN status TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN note TEXT NOT NULL DEFAULT '';
CREATE INDEX messages_segment ON messages (segment, id) WHERE segment IS NOT NULL;

-- Full-text search over what the user and the assistant wrote (rowid =
-- messages.id) and over thread titles.
CREATE VIRTUAL TABLE messages_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE threads_fts USING fts5(thread_id UNINDEXED, title, tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN new.source = '' AND new.role IN ('user', 'assistant')
BEGIN
    INSERT INTO messages_fts (rowid, text)
    SELECT new.id, group_concat(json_extract(value, '$.text'), ' ')
      FROM json_each(new.parts)
     WHERE json_extract(value, '$.type') = 'text' AND coalesce(json_extract(value, '$.b64'), 0) = 0
    HAVING count(*) > 0;
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
END;

CREATE TRIGGER threads_fts_insert AFTER INSERT ON threads
BEGIN
    INSERT INTO threads_fts (thread_id, title) VALUES (new.id, new.title);
END;

CREATE TRIGGER threads_fts_update AFTER UPDATE OF title ON threads
WHEN new.title IS NOT old.title
BEGIN
    DELETE FROM threads_fts WHERE thread_id = old.id;
    INSERT INTO threads_fts (thread_id, title) VALUES (new.id, new.title);
END;

CREATE TRIGGER threads_fts_delete AFTER DELETE ON threads
BEGIN
    DELETE FROM threads_fts WHERE thread_id = old.id;
END;

INSERT INTO messages_fts (rowid, text)
SELECT m.id, group_concat(json_extract(j.value, '$.text'), ' ')
  FROM messages m, json_each(m.parts) j
 WHERE m.source = '' AND m.role IN ('user', 'assistant')
   AND json_extract(j.value, '$.type') = 'text' AND coalesce(json_extract(j.value, '$.b64'), 0) = 0
 GROUP BY m.id;

INSERT INTO threads_fts (thread_id, title) SELECT id, title FROM threads;
