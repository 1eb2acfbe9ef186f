-- Conversations: one row per thread (chat.ThreadID), its messages in order,
-- and at most one compaction summary per thread. Times are unix
-- nanoseconds from Options.Now.
CREATE TABLE threads (
    id                   TEXT    PRIMARY KEY,
    channel              TEXT    NOT NULL DEFAULT '',
    title                TEXT    NOT NULL DEFAULT '',
    language             TEXT    NOT NULL DEFAULT '',
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    last_user_message_at INTEGER          -- NULL until the first user message
) WITHOUT ROWID;

CREATE INDEX threads_updated ON threads (updated_at DESC, id);

-- parts is a JSON array of typed parts: {"type":"text"|"tool_call"|"tool_result", ...}.
-- archived_at is set when compaction (or /new) takes a message out of the
-- active history; archived rows are purged later.
CREATE TABLE messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id   TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    role        TEXT    NOT NULL,
    parts       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    token_count INTEGER NOT NULL DEFAULT 0,
    archived_at INTEGER
);

-- History reads (thread_id, archived_at IS NULL) in id order from this index.
CREATE INDEX messages_thread_active ON messages (thread_id, archived_at, id);
-- Purge finds archived rows by age without scanning active ones.
CREATE INDEX messages_archived ON messages (archived_at) WHERE archived_at IS NOT NULL;

CREATE TABLE summaries (
    thread_id                 TEXT    PRIMARY KEY REFERENCES threads (id) ON DELETE CASCADE,
    text                      TEXT    NOT NULL,
    covers_through_message_id INTEGER NOT NULL DEFAULT 0,
    updated_at                INTEGER NOT NULL
) WITHOUT ROWID;
