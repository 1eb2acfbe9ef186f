// Package channelkit is what the chat channels (Telegram, Matrix, and any
// out-of-tree one) share, so that each writes only what its platform
// needs:
//
//   - Split cuts a markdown reply into messages of a platform's size,
//     measured as the platform counts (Bytes, UTF16Len), closing and
//     reopening a code block cut in two.
//   - Stream is a streamed reply shown by editing one message at most once
//     per interval, that ends with the whole reply (the first piece by an
//     edit, the rest as new messages); the channel supplies a Poster that
//     posts and edits one message.
//   - SendFileTool builds a channel's <channel>_send_file tool: it opens a
//     workspace file safely, checks its size, picks the thread, declares
//     where the file goes (approval: new_destinations) and hands the file
//     to the channel's Upload.
//   - SaveFile writes a received attachment under workspace/<channel>/….
//   - UserIDs is the allowed_users configuration type: a YAML list, one
//     value, or a comma-separated string (the environment variable's form).
//   - Backoff is the stateful backoff of a channel's run loop: each failure
//     waits longer, up to a cap, and a success resets it.
//   - Info builds a channel's registration.
//
// The message id a channel puts in chat.Inbound.ID lets the router accept a
// message redelivered after a crash once (see chat.Inbound); channels need
// no table of their own for that.
package channelkit
