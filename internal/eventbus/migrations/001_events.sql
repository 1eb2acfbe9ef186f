-- The event log. ids are never reused (AUTOINCREMENT), so a cursor that
-- points past a pruned event stays meaningful.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    topic      TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    created_at INTEGER NOT NULL -- unix nanoseconds, from Options.Now
);

-- One row per named subscriber: last_id is the highest event id handled or
-- dead-lettered (every matching event at or below it is done); inflight_id
-- and inflight_attempts count the deliveries started for the event being
-- handled, so a poison event that crashes the process is still
-- dead-lettered after max attempts.
CREATE TABLE event_cursors (
    subscriber        TEXT    PRIMARY KEY,
    prefix            TEXT    NOT NULL,
    last_id           INTEGER NOT NULL,
    inflight_id       INTEGER NOT NULL DEFAULT 0,
    inflight_attempts INTEGER NOT NULL DEFAULT 0,
    last_error        TEXT    NOT NULL DEFAULT '',
    updated_at        INTEGER NOT NULL
) WITHOUT ROWID;

-- Events a subscriber gave up on after max attempts.
CREATE TABLE event_dead_letters (
    subscriber TEXT    NOT NULL,
    event_id   INTEGER NOT NULL,
    error      TEXT    NOT NULL,
    attempts   INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    PRIMARY KEY (subscriber, event_id)
) WITHOUT ROWID;

CREATE INDEX event_dead_letters_event ON event_dead_letters (event_id);

-- Dead letters handed back for another round of deliveries (Requeue).
CREATE TABLE event_requeues (
    subscriber TEXT    NOT NULL,
    event_id   INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    at         INTEGER NOT NULL,
    PRIMARY KEY (subscriber, event_id)
) WITHOUT ROWID;

CREATE INDEX event_requeues_event ON event_requeues (event_id);
