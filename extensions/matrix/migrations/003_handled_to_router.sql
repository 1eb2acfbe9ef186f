-- The router now remembers the ids of the messages every channel handed it
-- (router_seen, chat.Inbound.ID), so the events remembered here move there:
-- a batch fetched again after the upgrade is still not answered twice.
-- handled_at and seen_at are both Unix milliseconds. The table is created
-- here when the router has not created it yet (the router's migration runs
-- first in the app; this channel's own tests run without it); both
-- definitions are the same.
CREATE TABLE IF NOT EXISTS router_seen (
    channel    TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    seen_at    INTEGER NOT NULL,
    PRIMARY KEY (channel, message_id)
);
CREATE INDEX IF NOT EXISTS router_seen_at ON router_seen (seen_at);
INSERT OR IGNORE INTO router_seen (channel, message_id, seen_at)
    SELECT 'matrix', event_id, handled_at FROM matrix_handled;
DROP TABLE matrix_handled;
