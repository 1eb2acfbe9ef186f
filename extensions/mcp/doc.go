// Package mcp is Reverie's Model Context Protocol extension, in both
// directions, built on the official SDK (github.com/modelcontextprotocol/go-sdk).
//
// As a client it runs the MCP servers of the `mcp.servers` section (a
// command over stdio, or a streamable HTTP URL), discovers their tools with
// tools/list (again on notifications/tools/list_changed) and offers them to
// the model as "<server>__<tool>" with the server's JSON schema, through
// extension.DynamicToolProvider: a server that is down has no tools in the
// model's list. Each server is supervised: one that fails to start, exits
// or stops answering pings is restarted with capped exponential backoff,
// and is reported by the extension's health check (/status, /api/v1/info)
// until it is up again. Tool calls have the server's timeout and are
// cancelled (notifications/cancelled) with the turn. The tools carry the
// categories "mcp" and "mcp:<server>", so tools.allow, tools.deny and the
// workflow profiles select them with "@mcp" and "@mcp:<server>".
//
// As a server it offers the user's memory, pulse, reminders, skills and
// world state, and a send_message tool, to other MCP clients: over stdio
// (`reverie mcp`, see ServeStdio) and over streamable HTTP at /mcp on the
// web listener, behind the web channel's token (extension.HTTPProvider).
package mcp
