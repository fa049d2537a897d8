// Package jsonrpc is ZeroClaw's JSON-RPC 2.0 engine: messages and errors, the
// envelope classifier that applies the seed's rules to every inbound frame, the
// NDJSON framer, and Conn, one bidirectional connection with a pending-request map
// per direction.
//
// The package knows frames and messages, never sockets or methods: a transport hands
// it a FrameReader and a FrameWriter, and a Handler decides what a method means.
// Adding a transport (WebSocket, a named pipe) means adding a framer, nothing else.
//
// # Goroutines of a Conn
//
// One reader goroutine (Run) reads, classifies and dispatches frames. One function,
// Options.Schedule, tells how each request is served: inline by the reader
// (Inline), in order on a short-lived goroutine the reader waits for (Ordered: deep
// calls such as the handshake, so that the reader's stack stays small), or on a
// goroutine of its own once it holds one of MaxInFlight slots (Spawn); a Priority
// request has slots of its own and never waits for the ordinary ones. During a
// burst of pipelined frames the reader takes its small allocations from an arena
// (arena.go); a small request scheduled InPlace is served straight from the framer's buffer, with nothing
// copied or allocated for it. A request served on its own goroutine gets a
// context of its own, which ends when its handler returns or the connection closes.
//
// Everything the connection sends, answers, notifications and its own requests, is
// appended to one outbound queue (over a StreamFramer such as NDJSON, the framed
// bytes themselves, in a pooled buffer); one writer goroutine, started when the
// queue fills and gone when it is empty, writes all that gathered in one write. Answers of
// inline requests wait in the queue while the reader has more frames buffered and
// leave before it blocks in read, so a pipelining peer gets a burst of answers in
// one write, and a lone request its answer at once. A write that stalls for the
// framer's write timeout (30 s) closes the connection.
//
// # Delivery (docs/protocol.md, "Delivery")
//
// Notify never waits for the peer. The notifications queued and not yet written are
// bounded by Options.OutboundFrames (2,048) and Options.OutboundBytes (4 MiB),
// whichever fills first; a notification that does not fit is refused with
// ErrQueueFull and nothing is queued. Responses are never refused: they are bounded
// by the in-flight slots, and the reader stops reading while 4 MiB of them wait. A
// sender that was refused learns from Room when the queue has room again: the
// channel it returns is closed once the queued notifications fill at most half of
// both bounds, or the connection closed (check Done). The session layer uses this to
// detach a lagging connection and, once Room fires, send it one "lagged" update.
package jsonrpc
