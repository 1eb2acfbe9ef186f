-- Tool calls waiting for (or decided by) the user's approval. A pending row
-- outlives a restart: the resumed turn finds it and waits again; a row whose
-- deadline passed unanswered is expired (the call counts as denied).
CREATE TABLE approvals (
    id          TEXT    PRIMARY KEY,
    thread      TEXT    NOT NULL,
    channel     TEXT    NOT NULL DEFAULT '',
    call_id     TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    arguments   TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    deadline    INTEGER NOT NULL,
    decided_at  INTEGER,
    decided_via TEXT    NOT NULL DEFAULT '',
    -- 1 once a waiting call took the decision; an answer given while no
    -- call waited (just after a restart) is taken by the resumed call.
    consumed    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX approvals_call ON approvals (thread, call_id);
CREATE INDEX approvals_pending ON approvals (state, deadline);
