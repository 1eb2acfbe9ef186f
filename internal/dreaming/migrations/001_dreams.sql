CREATE TABLE dream_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    trigger     TEXT NOT NULL,
    report      TEXT NOT NULL DEFAULT '{}',
    reverted_at INTEGER
);

-- Every change a dream made, in order, with what is needed to undo it.
CREATE TABLE dream_changes (
    run_id  INTEGER NOT NULL REFERENCES dream_runs(id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    target  TEXT NOT NULL,    -- memory | pulse | file
    action  TEXT NOT NULL,    -- closed | created | updated | written
    ref     TEXT NOT NULL,    -- memory id, pulse id or data-dir-relative path
    before  TEXT,             -- JSON of the pulse item, or the file's content (NULL: absent)
    PRIMARY KEY (run_id, seq)
);

-- Content fingerprints as the last dream left them: unchanged skills and an
-- unchanged flat MEMORIES.txt are not sent to the model again.
CREATE TABLE dream_seen (
    key  TEXT PRIMARY KEY,  -- data-dir-relative path
    hash TEXT NOT NULL
);
