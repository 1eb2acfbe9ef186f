-- Scheduler: durable tasks (reminders, AI tasks, system tasks and the
-- extension jobs registered at start) and one receipt per run. Times are
-- unix nanoseconds.
CREATE TABLE scheduler_tasks (
    id           TEXT    PRIMARY KEY,
    kind         TEXT    NOT NULL,             -- reminder | ai_task | system | job
    text         TEXT    NOT NULL DEFAULT '',
    ai_prompt    TEXT    NOT NULL DEFAULT '',
    thread       TEXT    NOT NULL DEFAULT '',  -- '' for system tasks and jobs
    sub_session  INTEGER NOT NULL DEFAULT 0,
    job          TEXT    NOT NULL DEFAULT '',  -- "<extension>/<job>" for jobs
    spec         TEXT    NOT NULL,             -- JSON Spec
    status       TEXT    NOT NULL,             -- active | paused | done | cancelled | inactive
    next_run     INTEGER,                      -- NULL when not armed
    last_run     INTEGER,
    last_outcome TEXT    NOT NULL DEFAULT '',
    runs         INTEGER NOT NULL DEFAULT 0,
    failures     INTEGER NOT NULL DEFAULT 0,   -- consecutive
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- The timer reads the earliest next_run of the active tasks from here.
CREATE INDEX scheduler_tasks_due ON scheduler_tasks (next_run) WHERE status = 'active';
CREATE UNIQUE INDEX scheduler_tasks_job ON scheduler_tasks (job) WHERE job <> '';

CREATE TABLE scheduler_receipts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id       TEXT    NOT NULL,
    scheduled_at  INTEGER NOT NULL,            -- the (first) run time this receipt is for
    started_at    INTEGER NOT NULL,
    outcome       TEXT    NOT NULL,            -- running | fired | skipped | failed
    reason        TEXT    NOT NULL DEFAULT '',
    count         INTEGER NOT NULL DEFAULT 1,  -- run times covered (skipped runs may be grouped)
    catch_up      INTEGER NOT NULL DEFAULT 0,
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX scheduler_receipts_task ON scheduler_receipts (task_id, id);
CREATE INDEX scheduler_receipts_started ON scheduler_receipts (started_at);
