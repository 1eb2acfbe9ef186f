-- Memories are indexed for full-text search (TextSearch) in batches instead
-- of one by one (issue 32): every transaction that adds to an FTS5 index
-- writes a new segment at commit and merges segments now and then, and
-- every answered turn stores its episodes in a transaction of its own. Now
-- the inserts leave the index behind by up to a batch of memories, the
-- insert that completes a batch indexes it in its transaction, and a search
-- first indexes whatever is left (ftsIndex, a sqlite.LaggingIndex).
-- memories_fts_done holds the largest memory id already indexed: a memory
-- above it is not in the index, so deleting it or changing its text leaves
-- the index alone (an external-content index must only be told to delete
-- what it holds). Ids above the largest one left are given again
-- (INTEGER PRIMARY KEY without AUTOINCREMENT), so a delete brings the mark
-- down to the largest id left.
DROP TRIGGER memories_fts_ai;
DROP TRIGGER memories_fts_ad;
DROP TRIGGER memories_fts_au;
CREATE TABLE memories_fts_done (id INTEGER NOT NULL);
INSERT INTO memories_fts_done (id) SELECT coalesce(max(id), 0) FROM memories;
-- (One trigger: SQLite runs a statement's triggers newest first, and the
-- index must be told of the delete before the mark moves.)
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories
BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text)
    SELECT 'delete', old.id, old.text WHERE old.id <= (SELECT id FROM memories_fts_done);
    UPDATE memories_fts_done SET id = (SELECT coalesce(max(id), 0) FROM memories)
     WHERE id > (SELECT coalesce(max(id), 0) FROM memories);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF text ON memories
WHEN old.id <= (SELECT id FROM memories_fts_done)
BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
END;
