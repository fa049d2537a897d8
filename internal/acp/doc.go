// Package acp is the bridge behind `zeroclaw acp` (docs/protocol.md, "ACP"): an Agent
// Client Protocol v1 agent on stdin/stdout, as editors (Zed, JetBrains, Neovim,
// Emacs) start one, whose sessions are the daemon's. On one side it speaks ACP v1
// NDJSON with the editor; on the other it is an ordinary client of the daemon (the
// public client package), reconnecting, or starting an ephemeral daemon again, when
// the daemon goes away.
//
// The package owns the translation only: ACP methods to native ones, native updates
// and requests (approvals, questions) to ACP ones, native error codes to ACP's. It
// keeps no state that the daemon does not also keep, except what a reconnect needs
// (which sessions it used and the last update it forwarded of each). It never writes
// anything but ACP frames to its output; its log goes to the logger.
package acp
