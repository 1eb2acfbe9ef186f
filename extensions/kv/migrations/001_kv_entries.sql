-- Namespaced key-value entries of the kv extension.
CREATE TABLE kv_entries (
    namespace  TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    is_json    INTEGER NOT NULL DEFAULT 0,
    revision   INTEGER NOT NULL DEFAULT 1,
    created_at TEXT    NOT NULL,
    updated_at TEXT    NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
