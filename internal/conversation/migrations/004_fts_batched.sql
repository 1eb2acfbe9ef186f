-- Messages are indexed for search in batches instead of one by one (issue
-- 32): an FTS5 insert costs little, but every transaction that adds to the
-- index writes a new segment at commit and merges segments now and then,
-- and a turn stores its messages in two transactions of its own. Now the
-- appends leave the index behind by up to a batch of messages, the append
-- that completes a batch indexes it in its transaction, and a search first
-- indexes whatever is left (ftsIndex, a sqlite.LaggingIndex). messages_fts_done holds
-- the largest message id already considered for indexing (indexed, or not
-- indexable: sub-session and system messages); messages deleted before
-- their turn are simply never indexed (the delete trigger stays).
DROP TRIGGER messages_fts_insert;
CREATE TABLE messages_fts_done (id INTEGER NOT NULL);
INSERT INTO messages_fts_done (id) SELECT coalesce(max(id), 0) FROM messages;
