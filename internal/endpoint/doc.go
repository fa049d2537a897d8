// Package endpoint owns where the daemon lives and how a process reaches it:
// resolving the config and data directories, naming the local endpoint (a Unix
// socket or a Windows named pipe), listening on it as the only daemon for that
// endpoint, dialing it, and reading the credentials of the process on the other
// end of a local connection.
//
// It knows nothing of JSON-RPC: it hands out byte streams (net.Conn) and peer
// labels, and never reads or writes a frame.
//
// On Unix the endpoint is guarded three ways (docs/protocol.md,
// "The daemon process"): the socket file is created
// with mode 0600 under a restrictive umask, so it is never reachable with wider
// permissions; an advisory lock on "<socket>.lock" makes one daemon per endpoint;
// and a socket file is removed only after checking that it is still the inode we
// looked at, so a daemon never deletes another's socket.
package endpoint
