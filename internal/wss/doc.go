// Package wss is the daemon's remote transport (docs/protocol.md,
// "Transport and framing"): a TLS listener that upgrades any path to a WebSocket and
// hands each connection, as a jsonrpc.Framer, to the same server that serves the
// local endpoint. It owns the certificate (a self-signed one in the data dir unless
// the config names one), the Origin check, and the keepalive ping. It knows nothing
// of methods, principals or tokens: those stay with internal/rpc, which sees a WSS
// connection only as a remote Peer.
package wss
