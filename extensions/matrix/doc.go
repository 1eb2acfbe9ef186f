// Package matrix is Reverie's Matrix channel (extension and channel
// "matrix", threads "matrix:<room id>"), built on maunium.net/go/mautrix
// with its pure-Go Olm/Megolm implementation (goolm; no cgo).
//
// Configuration (the matrix: section; every key also from
// REVERIE_MATRIX__<KEY>, lists comma-separated):
//
//	matrix:
//	  homeserver: https://matrix.example.org
//	  user_id: "@reverie:example.org"
//	  password: {env: MATRIX_PASSWORD}      # or access_token: {env: MATRIX_TOKEN}
//	  device_name: Reverie
//	  allowed_users: ["@you:example.org"]  # nobody else is answered or can invite the bot
//	  encryption: true                      # end-to-end encryption (default)
//	  recovery_key_file: secrets/matrix_recovery.key
//	  group_mode: mention                   # mention (default), all, off
//	  edits: true                           # stream replies by editing one message
//	  edit_interval: 2s
//	  max_file_bytes: 20971520
//
// The extension is opt-in but turns itself on when a homeserver, a user id
// and a credential are configured (enabled: false keeps it off).
// Credentials the homeserver refuses at start are a configuration error
// (the agent exits with code 2); an unreachable homeserver is not: the
// channel retries with capped backoff while the rest of Reverie runs, and
// /status, /api/v1/info and `reverie doctor` say so.
//
// # Login and keys
//
// The bot logs in once; its device id, access token and the pickle key of
// its encryption keys are kept in <data>/matrix/session.json (mode 0600),
// and reused on restart. The room state and the Olm/Megolm crypto store
// live in <data>/matrix/crypto.db. On first start with encryption on, the
// channel creates cross-signing keys, keeps them in the account's secret
// storage under a new recovery key written to recovery_key_file (mode
// 0600), and signs its own device, so clients show it as verified. Later
// starts unlock the keys with that file. SAS (emoji) verification requests
// from allowed users are accepted, the emojis are posted in the direct chat
// for the user to compare, and the bot confirms its side; other users'
// requests are cancelled.
//
// # Who gets through
//
// Only allowed_users are answered; anyone else is ignored and logged once.
// Invites from allowed users are accepted, others refused; a room where no
// allowed user remains is left. A room with the bot and one other member
// is a direct chat; in larger rooms, with group_mode mention, the bot
// answers only messages that mention it or reply to it.
//
// # Delivery guarantees
//
// The sync token is stored only after every message of a /sync batch was
// accepted by the router (which stores it). Each message carries its event
// id (chat.Inbound.ID) and the router accepts an id once, so a batch
// fetched again (after a crash or a refusal) is not answered twice. Messages older than the bot's invite to a room, or than its first
// login, are history and not answered. An encrypted message whose key has
// not arrived is retried after every sync, its key is requested from the
// sender's devices, and if it stays unreadable the sender is told once.
// Rate limits (M_LIMIT_EXCEEDED) are honoured with retry_after_ms; other
// failures back off from one second to a minute.
//
// # Messages
//
// Replies are rendered from markdown to Matrix HTML (formatted_body, raw
// HTML escaped) with a plain body; replies over MaxMessageLen bytes are
// split on paragraph boundaries. While a turn runs the room shows
// "typing…", and the reply is streamed by editing one message (m.replace)
// at most once per edit_interval, or sent once when edits are off. The
// user's messages get read receipts. Images and files the user sends are
// saved under <data>/workspace/matrix/<room>/; images reach the model as
// image parts, an m.audio message is an audio attachment (transcribed by
// the router and answered as typed text). SendVoice sends a spoken reply as
// an m.audio voice message (MSC3245). The matrix_send_file tool sends a
// workspace file to a room.
//
// # Concurrency
//
// Run owns the sync loop, which calls every event handler; each reply
// stream owns its typing goroutine and waits for it in Close. Send and
// OpenStream are safe for concurrent use.
package matrix
