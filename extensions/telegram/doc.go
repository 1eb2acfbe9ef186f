// Package telegram is Reverie's Telegram channel (extension and channel
// "telegram", threads "telegram:<chat id>"), built on
// github.com/go-telegram/bot with long polling: no public URL is needed.
//
// Configuration (the telegram: section; every key also from
// REVERIE_TELEGRAM__<KEY>, lists comma-separated):
//
//	telegram:
//	  token: {env: TELEGRAM_BOT_TOKEN}  # from @BotFather; setting it turns the channel on
//	  api_url: https://api.telegram.org # a self-hosted Bot API server, or a test server
//	  allowed_users: [123456789]        # numeric user ids let in without pairing
//	  group_mode: mention               # mention (default), all, off
//	  pairing_ttl: 1h                   # how long a pairing code stays valid
//	  max_file_bytes: 20971520          # largest attachment downloaded
//
// The extension is opt-in but turns itself on when a token is configured
// (enabled: false keeps it off). A token Telegram rejects at start is a
// configuration error (the agent exits with code 2); an unreachable
// Telegram is not: the channel retries with capped backoff while the rest
// of Reverie runs.
//
// # Who gets through
//
// Private messages from allowed users (allowed_users plus the people
// approved by pairing) go to the router. Anyone else who writes to the bot
// in a private chat gets a one-time pairing code (stored hashed, expiring
// after pairing_ttl) and nothing else: the owner approves it with `reverie
// telegram approve CODE`, `/approve CODE` on one of the owner's channels, or
// POST /api/v1/telegram/approve. In groups only allowed users are heard,
// and with group_mode mention only when they mention the bot, reply to it
// or address a command to it.
//
// # Delivery guarantees
//
// The poller asks getUpdates for updates after the stored offset and
// advances the offset (in the database, and so at Telegram with the next
// request) only after each update's message was accepted by the router,
// which stores it before returning. A crash before that leaves the update
// at Telegram, and it is fetched again at the next start: nothing is lost.
// A restart never answers a message twice: each message carries its id
// ("<chat id>/<message id>", chat.Inbound.ID), and the router accepts an id
// once, so an update fetched again because the process died between the
// router storing its message and the offset being written is dropped.
// Replies are stored by the router before they are
// sent; a send that fails after retries is logged, never lost from the
// conversation.
//
// Failures: 429 answers are retried after their retry_after; 409 (another
// program polls with the same token, or a webhook is set) is reported in
// the log and in /status and retried; network errors are retried with
// backoff capped at one minute. The token never appears in a log line or
// an error: it is registered with the host's secret redaction
// (Host.RegisterSecret) in Init, and every error from the Bot API is
// scrubbed of it by the client as well.
//
// # Messages
//
// Replies are converted from markdown to Telegram's HTML subset, with
// everything else escaped; a message Telegram cannot parse is resent as
// plain text. Replies over 4,096 characters are split on paragraph
// boundaries. While a turn runs the chat shows "typing…" (refreshed every
// 4 seconds) and the reply is streamed by editing one message at most once
// per second. Photos, documents, voice notes and audio files are saved
// under <data>/workspace/telegram/<chat>/; a photo is an image attachment,
// a voice note or audio file an audio attachment (the router has it
// transcribed and answers the words as typed text), a document's path is
// handed to the model with the caption. SendVoice sends a spoken reply as a
// voice note (sendVoice, Ogg/Opus). The telegram_send_file tool sends a
// workspace file to the chat.
//
// # Concurrency
//
// Run owns the poller; each reply stream owns its typing goroutine and
// waits for it in Close. Send and OpenStream are safe for concurrent use.
package telegram
