-- Pulse items: the assistant's working memory (active goals, work in
-- progress, open questions). Ids are AUTOINCREMENT so a purged item's id is
-- never handed out again: the model refers to items by id. Times are unix
-- nanoseconds; completed_at is when the item was completed or cancelled
-- (NULL while active).
CREATE TABLE pulse_items (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    text         TEXT    NOT NULL,
    priority     INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 10),
    status       TEXT    NOT NULL CHECK (status IN ('active', 'completed', 'cancelled')),
    thread       TEXT    NOT NULL DEFAULT '',
    source       TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    completed_at INTEGER
);

CREATE INDEX pulse_items_status ON pulse_items (status, priority, id);
CREATE INDEX pulse_items_closed ON pulse_items (completed_at) WHERE completed_at IS NOT NULL;

-- One row: bumped in the same transaction as every change, so a periodic
-- review can tell "nothing changed" with one indexed read.
CREATE TABLE pulse_revision (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    revision   INTEGER NOT NULL,
    changed_at INTEGER NOT NULL
);

INSERT INTO pulse_revision (id, revision, changed_at) VALUES (1, 0, 0);
