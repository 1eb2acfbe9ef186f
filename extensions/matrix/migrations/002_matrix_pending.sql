-- Encrypted messages waiting for their room key, kept so that a restart
-- still retries them; a row goes once its message is read or the sender
-- is told it stays unreadable.
CREATE TABLE matrix_pending (
	event_id TEXT PRIMARY KEY,
	room_id  TEXT    NOT NULL,
	event    TEXT    NOT NULL, -- the encrypted event as received (JSON)
	since_ms INTEGER NOT NULL
);
