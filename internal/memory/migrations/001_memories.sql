-- Long-term memories. Times are unix nanoseconds (UTC).
CREATE TABLE memories (
    id           INTEGER PRIMARY KEY,
    text         TEXT    NOT NULL,
    norm         TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    source       TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    valid_from   INTEGER NOT NULL,
    valid_to     INTEGER,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_access  INTEGER,
    event_time   INTEGER,
    thread       TEXT    NOT NULL DEFAULT '',
    embedding    BLOB,
    embed_model  TEXT    NOT NULL DEFAULT ''
);
-- at most one current memory per normalised text
CREATE UNIQUE INDEX memories_norm_current ON memories(norm) WHERE valid_to IS NULL;
CREATE INDEX memories_created ON memories(created_at);
CREATE INDEX memories_embed_model ON memories(embed_model);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    text,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF text ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
END;
