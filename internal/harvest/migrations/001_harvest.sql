-- How far each thread has been harvested.
CREATE TABLE harvest_state (
    thread          TEXT PRIMARY KEY,
    last_message_id INTEGER NOT NULL,
    harvested_at    INTEGER NOT NULL,
    session         TEXT NOT NULL DEFAULT ''
);
