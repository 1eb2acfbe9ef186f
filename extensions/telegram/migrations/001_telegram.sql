-- The Telegram channel's state: the getUpdates offset, the people let in by
-- pairing, and the pairing codes waiting for the owner (hashed).
CREATE TABLE telegram_state (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);

CREATE TABLE telegram_users (
	user_id     INTEGER PRIMARY KEY,
	chat_id     INTEGER NOT NULL,
	name        TEXT    NOT NULL DEFAULT '',
	approved_at INTEGER NOT NULL,
	-- 0 until the person was told they are in.
	notified    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE telegram_pairing (
	code_hash    TEXT    PRIMARY KEY,
	user_id      INTEGER NOT NULL UNIQUE,
	chat_id      INTEGER NOT NULL,
	name         TEXT    NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	last_sent_at INTEGER NOT NULL
);
