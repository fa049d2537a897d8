// Package rpc is the daemon's method layer: the handshake gate, the principal of each
// connection, and the method table, one file per method family. It serves any
// jsonrpc.Framer, so the local socket and WSS share every rule; it never listens or
// accepts, and knows nothing of sockets beyond the Peer a transport describes.
package rpc
