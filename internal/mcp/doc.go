// Package mcp runs MCP servers for the daemon (docs/protocol.md,
// "Tools from MCP servers") on the official Go SDK:
// stdio servers as child processes, Streamable HTTP and SSE servers over HTTP. A
// server starts when a turn or tools/list first needs it, is shared by every
// session, restarts on the next call after it died (at most once per 5 s), and
// stops with the daemon; a stdio server also when the daemon is killed (its stdin
// ends, and on Linux PR_SET_PDEATHSIG). Its tools become agent tools named
// <server>__<tool>. internal/acp uses the same Manager for the editor's servers.
//
// What a server may offer: tools only. The client declares no capabilities (no
// roots, sampling or elicitation), so the SDK answers a server's
// sampling/createMessage with error -31001, elicitation/create with -32602, and
// roots/list with an empty list; resources and prompts are not read or offered to
// the model; logging notifications are dropped (stderr goes to the daemon's log).
package mcp
