-- Vectors are stored compact from now on: int8 codes with one float32
-- scale, exactly the quantisation of the in-memory index (vecblob.go), a
-- quarter of the float32 BLOBs written until now (2 KB a memory with the
-- built-in sentence encoder, which no longer fit two rows to a 4 KB page).
-- The vectors already stored are converted by the store in the background,
-- in batches, after the index has loaded (compact.go): this table holds a
-- row while some may be left in the float32 format, after_id being the
-- largest memory id converted so far, and loses it when every vector is
-- compact. A store without vectors has nothing to convert. Readers take
-- either format meanwhile (a float32 BLOB's length is a multiple of 4, a
-- compact one's never is).
CREATE TABLE memory_vectors_float32 (after_id INTEGER NOT NULL);
INSERT INTO memory_vectors_float32 (after_id)
SELECT 0 WHERE EXISTS (SELECT 1 FROM memories WHERE embedding IS NOT NULL)
            OR EXISTS (SELECT 1 FROM memory_pending_embeddings);
