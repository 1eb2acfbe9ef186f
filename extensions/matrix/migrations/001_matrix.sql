-- The Matrix channel's state: the sync token and filter, the events already
-- handed to the router (so a restart never answers twice), and per room the
-- time before which messages are history, not questions (set when the bot
-- joins a room or first logs in).
CREATE TABLE matrix_state (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

CREATE TABLE matrix_handled (
	event_id   TEXT PRIMARY KEY,
	room_id    TEXT    NOT NULL,
	handled_at INTEGER NOT NULL
);
CREATE INDEX matrix_handled_at ON matrix_handled (handled_at);

CREATE TABLE matrix_rooms (
	room_id  TEXT PRIMARY KEY,
	floor_ms INTEGER NOT NULL
);
