-- Embedding cache keyed by sha256(model id + NUL + text).
CREATE TABLE embed_cache (
    key        BLOB    PRIMARY KEY,
    model      TEXT    NOT NULL,
    vector     BLOB    NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX embed_cache_model ON embed_cache(model);
