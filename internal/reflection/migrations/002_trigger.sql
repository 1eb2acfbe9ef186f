-- The durable trigger. The bus delivers sub_session.* events to the
-- "reflection" subscriber at least once; the handler records here that a
-- cycle is owed before the event is acknowledged, so a failure burst seen
-- before a crash still runs a cycle after the restart.
CREATE TABLE reflection_trigger (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    last_event    INTEGER NOT NULL DEFAULT 0,  -- highest event id counted (redeliveries are ignored)
    completions   INTEGER NOT NULL DEFAULT 0,  -- sub_session.completed since the last batch
    pending       TEXT    NOT NULL DEFAULT '', -- the owed cycle: '', 'failure' or 'batch'
    pending_since INTEGER NOT NULL DEFAULT 0,  -- unix ns: when it became owed (the debounce starts)
    generation    INTEGER NOT NULL DEFAULT 0,  -- bumped by every event that makes a cycle owed
    last_cycle    INTEGER NOT NULL DEFAULT 0   -- unix ns of the last cycle Run ran (the fallback counts from it)
);
INSERT INTO reflection_trigger (id) VALUES (1);
