-- Vectors made by a new embedding model while the memories' own vectors
-- (memories.embedding, of the model recall still uses) stay in service;
-- moved into memories in one transaction when every memory has one.
CREATE TABLE memory_pending_embeddings (
    id        INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    model     TEXT    NOT NULL,
    embedding BLOB    NOT NULL
);
