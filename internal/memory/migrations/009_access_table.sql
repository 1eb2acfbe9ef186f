-- Access statistics get a table of their own (issue 32). Every recall
-- counts an access to each memory it returns, and the access queue
-- (accessQueue) writes the counts in batches; in memories, each count
-- rewrote the memory's whole row (its text, normalised text and vector:
-- ~3 KB, a page or more), so a flush of 256 memories wrote ~300 pages to
-- the WAL and the checkpoint copied them again. Here a memory's counts are
-- a row of a few bytes, and a flush touches the few pages that hold them.
-- A memory that was never recalled has no row (access_count 0).
CREATE TABLE memory_access (
    memory_id    INTEGER PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    access_count INTEGER NOT NULL,
    last_access  INTEGER
);
INSERT INTO memory_access (memory_id, access_count, last_access)
SELECT id, access_count, last_access FROM memories WHERE access_count <> 0 OR last_access IS NOT NULL;
-- Dropping the columns rewrites memories once, at this migration.
ALTER TABLE memories DROP COLUMN access_count;
ALTER TABLE memories DROP COLUMN last_access;
-- What reads a memory with its statistics reads this view. It names
-- memories' columns one by one: a column added to memories later is added
-- here too (drop and create the view) when readers need it.
CREATE VIEW memories_read AS
SELECT m.id, m.text, m.norm, m.kind, m.source, m.created_at, m.updated_at, m.valid_from, m.valid_to,
       coalesce(a.access_count, 0) AS access_count, a.last_access AS last_access,
       m.event_time, m.thread, m.embedding, m.embed_model, m.superseded_by, m.session, m.speaker, m.role
FROM memories m LEFT JOIN memory_access a ON a.memory_id = m.id;
