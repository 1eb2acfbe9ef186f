-- Turns in progress. A message or system event keeps its inbox row until
-- its turn has ended (reply stored, or failure reported), so that a start-up
-- after a crash finds every turn the crash interrupted. started_at marks
-- that the turn began (0: not yet); after_message_id is the thread's last
-- message id just before the turn stored the item, so that a start-up can
-- tell whether the item reached the conversation; attempts counts starts.
ALTER TABLE router_inbox ADD COLUMN started_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE router_inbox ADD COLUMN after_message_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE router_inbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;

-- The tool calls of a turn in progress: each is written with its arguments
-- before it runs and marked finished with its result after, so that what
-- an interrupted turn did (or may have done) is known. read_only says the
-- tool declared itself free of side effects. Rows go with their inbox row.
CREATE TABLE router_tool_calls (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    inbox_id    INTEGER NOT NULL REFERENCES router_inbox (id) ON DELETE CASCADE,
    call_id     TEXT    NOT NULL,
    round       INTEGER NOT NULL,
    idx         INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    arguments   TEXT    NOT NULL,
    read_only   INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL DEFAULT 0,
    result      TEXT    NOT NULL DEFAULT '',
    is_error    INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX router_tool_calls_inbox ON router_tool_calls (inbox_id, id);
