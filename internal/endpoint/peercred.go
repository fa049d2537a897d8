package endpoint

// Peer describes the process on the other end of a local connection.
type Peer struct {
	Label string // "unix:pid=<pid>,uid=<uid>", "unix:unknown" or "pipe:local"
	UID   int    // -1 when unknown
	PID   int    // -1 when unknown
}
