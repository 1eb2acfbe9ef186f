-- The interaction log: one row per thing the agent did (an inference, a tool
-- call, a system event, a compaction, a supervisor check, …), for the debug
-- panel and `action=` filters. Times are unix nanoseconds.
CREATE TABLE interactions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    at            INTEGER NOT NULL,
    thread        TEXT    NOT NULL DEFAULT '',
    action        TEXT    NOT NULL,
    summary       TEXT    NOT NULL DEFAULT '',
    detail        TEXT    NOT NULL DEFAULT '',
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    error         TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX interactions_action ON interactions (action, id);
CREATE INDEX interactions_thread ON interactions (thread, id);
CREATE INDEX interactions_at ON interactions (at);
