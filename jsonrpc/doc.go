// Package jsonrpc is ZeroClaw's JSON-RPC 2.0 engine: messages and errors, the
// envelope classifier that applies the seed's rules to every inbound frame, the
// NDJSON framer, and Conn, one bidirectional connection with a pending-request map
// per direction.
//
// The package knows frames and messages, never sockets or methods: a transport hands
// it a FrameReader and a FrameWriter, and a Handler decides what a method means.
// Adding a transport (WebSocket, a named pipe) means adding a framer, nothing else.
package jsonrpc
