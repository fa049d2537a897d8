package jsonrpc

// Schedule is how a Conn serves one inbound request or notification; the
// Options.Schedule function gives one per frame, from the caller's table of
// methods. The zero value, Spawn, is right for most methods.
type Schedule uint8

const (
	// Spawn serves the request on a goroutine of its own, once one of the
	// MaxInFlight slots is free: the wait for a slot is the peer's backpressure.
	Spawn Schedule = iota
	// Priority serves the request like Spawn but on slots of its own: a peer whose
	// ordinary slots are all held by long calls can still reach the handler with
	// these (docs/protocol.md, "Delivery").
	Priority
	// Ordered serves the request in frame order, on a short-lived goroutine the
	// reader waits for: for calls that run deep, such as the handshake, so that the
	// reader's stack, which every idle connection keeps for its life, stays small.
	Ordered
	// Inline has the reader serve the request itself before it reads the next
	// frame: for methods too quick to be worth a goroutine. Inline requests take no
	// slot, and their ctx is the connection's.
	Inline
	// InPlace serves the request like Inline and, when its frame is small, straight
	// from the framer's buffer, which the next frame overwrites: its handler keeps
	// nothing of the request (its ID, its Params) once it has returned, and its
	// result nothing once encoded. It saves a copy of the frame and its garbage.
	InPlace

	// Recycle, or-ed into any of the above, says that the handler keeps nothing of
	// the request once it has returned and its answer is encoded: the buffer of a
	// large frame the reader took from the framer is then reused for later frames
	// instead of being left to the garbage collector (upload chunks, 1.4 MB each).
	Recycle Schedule = 1 << 7
)

// Mode is s without Recycle.
func (s Schedule) Mode() Schedule { return s &^ Recycle }

// scheduleOf is opts' schedule of req; Spawn when there is none.
func (c *Conn) scheduleOf(req *Request) Schedule {
	if c.schedule == nil {
		return Spawn
	}
	return c.schedule(req)
}
