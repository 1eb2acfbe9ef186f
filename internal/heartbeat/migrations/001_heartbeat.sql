-- Heartbeat: what the last review saw, so that a tick (and a restart) where
-- nothing changed makes no model call. One row. Times are unix nanoseconds.
CREATE TABLE heartbeat_state (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    digest        TEXT    NOT NULL,           -- hash of pulse revision, due and failing tasks
    event_cursor  INTEGER NOT NULL,           -- last bus event id looked at
    reviewed_at   INTEGER NOT NULL,           -- last tick that compared
    called_at     INTEGER,                    -- last scout call
    verdict       TEXT    NOT NULL DEFAULT '' -- the scout's last answer (JSON)
);
