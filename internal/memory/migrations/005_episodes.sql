-- Episodes: every exchange of a conversation is stored as episode memories
-- (one per utterance) with who said it and in which session, as columns
-- recall keys on (never a "Name: text" pattern in the text).
ALTER TABLE memories ADD COLUMN session TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN speaker TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN role    TEXT NOT NULL DEFAULT '';
-- Two utterances may say the same words ("Thanks!"); each is its own
-- episode, so the one-current-memory-per-text rule covers the other kinds.
DROP INDEX memories_norm_current;
CREATE UNIQUE INDEX memories_norm_current ON memories(norm) WHERE valid_to IS NULL AND kind <> 'episode';
CREATE INDEX memories_thread_session ON memories(thread, session);
