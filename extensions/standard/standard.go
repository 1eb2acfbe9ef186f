// Package standard selects Reverie's built-in extensions: importing it for
// its side effects registers every one of them with the kernel.
package standard

import (
	_ "github.com/reverie-ai/reverie/extensions/cli"      // terminal chat channel (enabled by reverie chat only)
	_ "github.com/reverie-ai/reverie/extensions/kv"       // kv_set, kv_get, kv_list, kv_delete
	_ "github.com/reverie-ai/reverie/extensions/matrix"   // Matrix channel (on when matrix.homeserver, user_id and a credential are set)
	_ "github.com/reverie-ai/reverie/extensions/mcp"      // MCP servers' tools; Reverie as an MCP server (/mcp, reverie mcp)
	_ "github.com/reverie-ai/reverie/extensions/telegram" // Telegram channel (on when telegram.token is set)
	_ "github.com/reverie-ai/reverie/extensions/web"      // HTTP listener, API, web page
)
