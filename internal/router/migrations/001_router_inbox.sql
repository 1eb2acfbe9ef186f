-- The router's inbox: every accepted message, system event and proactive
-- message waits here until its turn has stored it in the conversation, so
-- nothing accepted is lost when the process stops or dies before its turn
-- runs. Rows left at start-up are replayed in id order.
CREATE TABLE router_inbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    thread      TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    channel     TEXT    NOT NULL DEFAULT '',
    sender_id   TEXT    NOT NULL DEFAULT '',
    sender_name TEXT    NOT NULL DEFAULT '',
    text        TEXT    NOT NULL,
    origin      TEXT    NOT NULL DEFAULT '',
    received_at INTEGER NOT NULL
);
