-- Workflows of sub-sessions (background workers). Times are unix
-- nanoseconds; 0 means "not yet".
CREATE TABLE workflows (
    id          TEXT    PRIMARY KEY,
    root_thread TEXT    NOT NULL DEFAULT '',
    -- A workflow merged into another keeps its row so that its id still
    -- resolves; its nodes moved to merged_into.
    merged_into TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL DEFAULT 0
);

-- One row per sub-session (node of a workflow).
CREATE TABLE workflow_nodes (
    id              TEXT    PRIMARY KEY,          -- sub_…
    workflow_id     TEXT    NOT NULL,
    parent          TEXT    NOT NULL DEFAULT '',  -- spawning session: a user thread, a sub_… id, or '' (system)
    lineage         TEXT    NOT NULL DEFAULT '',  -- spawner identity across continuation hops (depends_on_previous)
    root_thread     TEXT    NOT NULL DEFAULT '',  -- the user-facing thread results end up in
    depth           INTEGER NOT NULL,
    objective       TEXT    NOT NULL,
    context         TEXT    NOT NULL DEFAULT '',
    mode            TEXT    NOT NULL,
    profile         TEXT    NOT NULL DEFAULT '',
    tool_names      TEXT    NOT NULL DEFAULT '',  -- JSON array; '' = the mode's default set
    depends_on      TEXT    NOT NULL DEFAULT '[]',-- JSON array of valid dependency ids
    not_before      INTEGER NOT NULL DEFAULT 0,
    timeout_ms      INTEGER NOT NULL,
    task_id         TEXT    NOT NULL DEFAULT '',
    hop             INTEGER NOT NULL DEFAULT 0,   -- continuation depth (0 = first worker)
    continuation_of TEXT    NOT NULL DEFAULT '',
    continued_by    TEXT    NOT NULL DEFAULT '',
    resumes         INTEGER NOT NULL DEFAULT 0,   -- restarts survived while running
    state           TEXT    NOT NULL,             -- pending|running|completed|failed|timeout|cancelled
    result          TEXT    NOT NULL DEFAULT '',
    error           TEXT    NOT NULL DEFAULT '',
    feedback        TEXT    NOT NULL DEFAULT '',  -- historical feedback injected at spawn
    tool_calls      INTEGER NOT NULL DEFAULT 0,
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    verdict         TEXT    NOT NULL DEFAULT '',
    delivered       INTEGER NOT NULL DEFAULT 0,   -- 1 once the result was handed on (or deliberately suppressed)
    created_at      INTEGER NOT NULL,
    started_at      INTEGER NOT NULL DEFAULT 0,
    finished_at     INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX workflow_nodes_workflow ON workflow_nodes (workflow_id);
CREATE INDEX workflow_nodes_open ON workflow_nodes (state, delivered);

-- A worker's message list, appended after every tool call (tool results in
-- completion order; loaded in call order).
CREATE TABLE workflow_messages (
    node_id TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    message TEXT    NOT NULL,                    -- JSON
    PRIMARY KEY (node_id, seq)
) WITHOUT ROWID;

-- Outcome of every sub-session run, for reflection and historical feedback.
CREATE TABLE sub_session_outcomes (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT    NOT NULL,
    workflow_id        TEXT    NOT NULL,
    task_id            TEXT    NOT NULL DEFAULT '',
    objective          TEXT    NOT NULL,
    mode               TEXT    NOT NULL,
    profile            TEXT    NOT NULL DEFAULT '',
    status             TEXT    NOT NULL,          -- completed|failed|timeout|cancelled
    started_at         INTEGER NOT NULL DEFAULT 0,
    finished_at        INTEGER NOT NULL,
    duration_ms        INTEGER NOT NULL DEFAULT 0,
    tool_calls         INTEGER NOT NULL DEFAULT 0,
    continuation_depth INTEGER NOT NULL DEFAULT 0,
    skills_loaded      TEXT    NOT NULL DEFAULT '[]',
    supervisor_verdict TEXT    NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    result_chars       INTEGER NOT NULL DEFAULT 0,
    error              TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX sub_session_outcomes_session ON sub_session_outcomes (session_id);
CREATE INDEX sub_session_outcomes_task ON sub_session_outcomes (task_id, id);
CREATE INDEX sub_session_outcomes_finished ON sub_session_outcomes (finished_at);

CREATE VIRTUAL TABLE sub_session_outcomes_fts USING fts5(
    objective, content='sub_session_outcomes', content_rowid='id'
);

CREATE TRIGGER sub_session_outcomes_ai AFTER INSERT ON sub_session_outcomes BEGIN
    INSERT INTO sub_session_outcomes_fts (rowid, objective) VALUES (new.id, new.objective);
END;

CREATE TRIGGER sub_session_outcomes_ad AFTER DELETE ON sub_session_outcomes BEGIN
    INSERT INTO sub_session_outcomes_fts (sub_session_outcomes_fts, rowid, objective) VALUES ('delete', old.id, old.objective);
END;
