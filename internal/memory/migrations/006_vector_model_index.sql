-- The start reads which embedding models the stored vectors are of
-- (StoredModels, chooseServing): with this partial index those counts read
-- only the index, not every memory's row.
CREATE INDEX memories_vector_model ON memories(embed_model) WHERE embedding IS NOT NULL;
