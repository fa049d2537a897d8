package jsonrpc

// The outbound queue of a stream framer: frames are appended to buffers of the
// stream's bytes, or borrowed from the sender's memory (outbox.go queues, the
// writer writes them in one call).

// StreamFramer is a Framer over a byte stream, where frames are delimited within
// the stream. Conn's outbound queue then holds the stream's bytes themselves.
type StreamFramer interface {
	// AppendFrame appends msg, framed, to dst.
	AppendFrame(dst, msg []byte) []byte
	// WriteStream writes b, whole frames made by AppendFrame, as WriteFrame would
	// write them one by one.
	WriteStream(b []byte) error
}

// A stream buffer takes frames until it holds streamChunk bytes (one frame larger
// than that has a buffer of its own); maxPooledStream bounds the buffers kept in
// streamBuffers.
const (
	streamChunk     = 128 << 10
	maxPooledStream = 256 << 10
)

// appendStream appends msg, framed, to the stream's last buffer, or to a new one
// when msg does not fit in the last one and growing it would make it streamChunk
// bytes or more.
func (o *outbox) appendStream(msg []byte) {
	b := o.streamBuffer(len(msg) + 1)
	*b = o.framer.AppendFrame(*b, msg)
}

// streamBuffer returns the buffer a frame of about n bytes is appended to: the
// stream's last one, or a new one when the frame does not fit in the last one and
// growing it would make it streamChunk bytes or more.
func (o *outbox) streamBuffer(n int) *[]byte {
	k := len(o.stream)
	if k == 0 || o.stream[k-1].own == nil {
		o.stream = append(o.stream, segment{own: streamBuffers.get(false)})
		k++
	} else if b := *o.stream[k-1].own; len(b) > 0 && len(b)+n > cap(b) && len(b)+n-1 >= streamChunk {
		// A backlog: this buffer, and likely the next, fill to streamChunk.
		o.stream = append(o.stream, segment{own: streamBuffers.get(true)})
		k++
	}
	return o.stream[k-1].own
}

// segment is a piece of the stream: a buffer of the outbox's own (from
// streamBuffers), or frames it borrowed (ref: NotifyPacedFrames), written from
// the sender's memory.
type segment struct {
	own *[]byte
	ref []byte
}

// appendRefLocked queues frame, borrowed, to the stream; mu is held. A frame that
// starts where the last borrowed one ends, in the same array, extends it, so that
// frames laid out one after the other (the session's tail) are one write.
func (o *outbox) appendRefLocked(frame []byte) {
	if k := len(o.stream); k > 0 && o.stream[k-1].ref != nil {
		last := o.stream[k-1].ref
		if n := len(last); len(frame) > 0 && n+len(frame) <= cap(last) && &last[:n+1][n] == &frame[0] {
			o.stream[k-1].ref = last[:n+len(frame)]
			return
		}
	}
	o.stream = append(o.stream, segment{ref: frame})
}

// StreamsWriter is a StreamFramer that can write several pieces of its stream in
// one system call (a socket's writev).
type StreamsWriter interface {
	// WriteStreams writes the pieces in order, as WriteStream would one by one.
	WriteStreams(pieces [][]byte) error
}

// writeStream writes the stream's segments in order, clears them, and gives the
// buffers it owned back to the pool. Over a StreamsWriter, consecutive segments
// go in one call, up to streamChunk bytes of them (so a write deadline still
// covers about a buffer's worth): a window of the session's tail that crosses
// one of its blocks is one write, not two.
func (o *outbox) writeStream(stream []segment) error {
	sw, _ := o.framer.(StreamsWriter)
	var err error
	size := 0
	flush := func() {
		switch {
		case err != nil || len(o.pieces) == 0:
		case len(o.pieces) == 1: // always so without a StreamsWriter
			err = o.framer.WriteStream(o.pieces[0])
		default:
			err = sw.WriteStreams(o.pieces)
		}
		clear(o.pieces)
		o.pieces, size = o.pieces[:0], 0
	}
	for _, sg := range stream {
		b := sg.ref
		if sg.own != nil {
			b = *sg.own
		}
		if size > 0 && (sw == nil || size+len(b) > streamChunk) {
			flush()
		}
		o.pieces = append(o.pieces, b)
		size += len(b)
	}
	flush()
	for i, sg := range stream {
		if sg.own != nil {
			streamBuffers.put(sg.own)
		}
		stream[i] = segment{}
	}
	if cap(o.pieces) > 64 {
		o.pieces = nil
	}
	return err
}
