// Package client is the Go client of the ZeroClaw daemon: it dials the local endpoint
// (a Unix socket or a Windows named pipe), optionally starting an ephemeral daemon
// when none answers, and speaks the daemon's JSON-RPC protocol (docs/protocol.md)
// over one bidirectional connection.
//
// A Client streams a turn's session/update notifications to a callback in the order
// the daemon sent them (through a queue bounded like the daemon's: a callback that
// falls 2,048 updates or 4 MiB behind makes the session lag, never silently: see
// LaggedError), answers the daemon's elicitation/create requests with an
// ElicitationHandler, and uploads files in chunks with a progress callback. A
// JSON-RPC error answer comes back as *Error, carrying the code and data.
//
// A client can serve tools of its own to a session (client tools, docs/protocol.md,
// "tool/call"): declare them in NewSessionParams.ClientTools (or SetSessionTools
// before Attach) and run them with a ToolHandler (SetToolHandler); the handler's
// context ends when the daemon withdraws the call. MCPStatus and ListTools show the
// daemon's MCP servers and a session's or agent's tools.
//
// Every Prompt carries an operationId of its own. With WithReconnect a Client
// outlives its connection: it dials again, re-attaches the sessions it follows after
// the last update it queued, and sends a Prompt in flight again with the same
// operationId, so that the turn is neither lost nor run twice (docs/protocol.md,
// "Reconnecting safely"); ConnectionEvent says when the daemon restarted meanwhile.
//
// The package owns the client side of the connection; it never writes to the
// daemon's files, and it never keeps anything on disk except the log of a daemon it
// started itself.
package client
