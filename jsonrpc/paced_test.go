package jsonrpc

import (
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pulls is a Puller that reports each Pull on a channel, on the writer.
type pulls chan struct{}

func (p pulls) Pull() { p <- struct{}{} }

// TestPacedNotificationsTakeAWindowAndPullWhenThereIsRoom: NotifyPaced takes
// notifications while less than PacedWindow bytes of them wait, refuses the next
// one without queuing it, and a Puller that Wants is pulled once the writer wrote
// enough. Paced notifications leave the bounded queue of Notify alone.
func TestPacedNotificationsTakeAWindowAndPullWhenThereIsRoom(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{OutboundFrames: 2})
	payload := jsontext.Value(`{"text":"` + strings.Repeat("x", 1000) + `"}`)
	sent := 0
	for {
		ok, err := c.NotifyPaced("session/update", payload)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		sent++
		if sent > 2*PacedWindow/len(payload) {
			t.Fatal("NotifyPaced never refused")
		}
	}
	if sent < PacedWindow/(len(payload)+64) || sent > PacedWindow/len(payload)+1 {
		t.Fatalf("%d paced notifications of %d bytes taken, want about a window of %d bytes", sent, len(payload), PacedWindow)
	}
	// The bounded queue is not theirs: two notifications still fit in it.
	for i := range 2 {
		if err := c.Notify("other", nil); err != nil {
			t.Fatalf("notification %d beside the paced ones: %v", i, err)
		}
	}
	room := make(pulls, 1)
	if err := c.Want(room); err != nil {
		t.Fatal(err)
	}
	select {
	case <-room:
		t.Fatal("pulled while the window is full")
	default:
	}
	// The writer's batches: what it took before the gate, then the rest (tokens to
	// spare: how it batches depends on timing).
	for range 16 {
		f.gate <- struct{}{}
	}
	<-room
	if ok, err := c.NotifyPaced("session/update", jsontext.Value(`{"last":true}`)); !ok || err != nil {
		t.Fatalf("NotifyPaced after a Pull: %v, %v", ok, err)
	}
	f.gate <- struct{}{}
	f.waitWritten(sent + 3)
	got := f.written()
	if last := got[len(got)-1]; !strings.Contains(last, `"last":true`) {
		t.Fatalf("the last frame written is %.100s", last)
	}
	c.Close()
	if ok, err := c.NotifyPaced("session/update", payload); ok || err == nil {
		t.Fatalf("NotifyPaced after close: %v, %v", ok, err)
	}
	if err := c.Want(room); !errors.Is(err, ErrClosed) {
		t.Fatalf("Want after close: %v, want ErrClosed", err)
	}
}

// TestAPacedBatchTakesWhatTheWindowHolds: NotifyPacedBatch queues, in order, as
// many notifications as the window takes and says how many; the rest go once the
// writer made room, and every frame leaves in order.
func TestAPacedBatchTakesWhatTheWindowHolds(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{})
	var batch []jsontext.Value
	for i := range 100 {
		batch = append(batch, jsontext.Value(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 1000))))
	}
	n, err := c.NotifyPacedBatch("session/update", batch)
	if err != nil || n == 0 || n >= len(batch) {
		t.Fatalf("a batch of %d frames of 1 KB into a window of %d: %d taken, %v", len(batch), PacedWindow, n, err)
	}
	if m, err := c.NotifyPacedBatch("session/update", batch[n:]); m != 0 || err != nil {
		t.Fatalf("into a full window: %d taken, %v", m, err)
	}
	room := make(pulls, 1)
	for taken := n; taken < len(batch); {
		if err := c.Want(room); err != nil {
			t.Fatal(err)
		}
		// Tokens for the writer's next writes: how many it takes to free half the
		// window depends on how it batched what was queued (timing), so it is
		// never short of one while the test waits for room.
		for len(f.gate) < 4 {
			f.gate <- struct{}{}
		}
		<-room
		m, err := c.NotifyPacedBatch("session/update", batch[taken:])
		if err != nil {
			t.Fatal(err)
		}
		taken += m
	}
	for range 8 {
		f.gate <- struct{}{}
	}
	f.waitWritten(len(batch))
	for i, line := range f.written() {
		if !strings.Contains(line, fmt.Sprintf(`{"n":%d,`, i)) {
			t.Fatalf("frame %d is %.40s", i, line)
		}
	}
}

// NotifyPacedFrames writes borrowed NDJSON frames in their order among the other
// frames (frames laid out one after the other, merged into one write, included),
// takes at most a window of them, and refuses a framer that is not NDJSON.
func TestPacedFramesAreWrittenFromTheCallersMemoryInOrder(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{})
	var block []byte
	var frames [][]byte
	for i := range 5 { // one array, as the session's tail lays them out
		start := len(block)
		block = fmt.Appendf(block, `{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`+"\n", i)
		frames = append(frames, block[start:len(block)])
	}
	if cap(block) == len(block) {
		block = append(block, 0)[:len(block)] // room after the last: a merge must stop at it
	}
	alone := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"n":5}}` + "\n")
	if n, err := c.NotifyPacedFrames(frames[:3]); n != 3 || err != nil {
		t.Fatalf("NotifyPacedFrames = %d, %v", n, err)
	}
	if err := c.Notify("other", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := c.NotifyPacedFrames(append(frames[3:], alone)); n != 3 || err != nil {
		t.Fatalf("NotifyPacedFrames = %d, %v", n, err)
	}
	want := []string{"0", "1", "2", "other", "3", "4", "5"}
	for _, w := range want {
		m := readMsg(t, peer, r)
		if w == "other" {
			if m["method"] != "other" {
				t.Fatalf("got %v, want the notification queued between the frames", m)
			}
			continue
		}
		if p, _ := m["params"].(map[string]any); fmt.Sprint(p["n"]) != w {
			t.Fatalf("got %v, want frame %s", m, w)
		}
	}

	big := make([][]byte, 0, 2*PacedWindow/len(alone))
	for range cap(big) {
		big = append(big, alone)
	}
	n, err := c.NotifyPacedFrames(big)
	if err != nil || n == 0 || n >= len(big) || n*len(alone) > PacedWindow {
		t.Fatalf("NotifyPacedFrames of %d frames of %d bytes took %d (%v), want at most a window of %d bytes", len(big), len(alone), n, err, PacedWindow)
	}

	g, _ := runGated(t, HandlerFunc(nil), Options{})
	if n, err := g.NotifyPacedFrames(frames); n != 0 || !errors.Is(err, ErrNotNDJSON) {
		t.Fatalf("NotifyPacedFrames over another framer = %d, %v, want ErrNotNDJSON", n, err)
	}
}

// source is a Puller that queues its frames from its Pull, on the writer, as the
// session's cursors do, and Wants again while the window took fewer than it has.
type source struct {
	c      *Conn
	name   string
	left   int
	pulled chan string
	gate   chan struct{} // when set, the first Pull waits for it to close
}

func (s *source) Pull() {
	if s.gate != nil {
		<-s.gate
		s.gate = nil
	}
	s.pulled <- s.name
	for s.left > 0 {
		frame := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"session/update","params":{"from":%q,"pad":"%s"}}`+"\n", s.name, strings.Repeat("x", 1000))
		n, err := s.c.NotifyPacedFrames([][]byte{frame})
		if err != nil {
			return
		}
		if n == 0 {
			s.c.Want(s) // the rest once the writer made room
			return
		}
		s.left--
	}
}

// TestTheWriterPullsFromEachSourceInTurnAtTheReadersPace: a Puller has no
// goroutine of its own: the writer calls it when the window has room, it queues
// frames from there, and two of them on one connection take the window in turn,
// until each one's frames are all written, in the order each queued them.
func TestTheWriterPullsFromEachSourceInTurnAtTheReadersPace(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{})
	pulled := make(chan string, 64)
	const each = 3 * PacedWindow / 1000 // three windows' worth each
	// a's first Pull, on the writer, waits until b wants too: else, on a busy
	// machine, the writer could pull all of a's frames, window after window, before
	// this goroutine ran again to make b's Want (a fresh-clone CI run saw [a b]).
	both := make(chan struct{})
	a := &source{c: c, name: "a", left: each, pulled: pulled, gate: both}
	b := &source{c: c, name: "b", left: each, pulled: pulled}
	if err := c.Want(a); err != nil {
		t.Fatal(err)
	}
	if err := c.Want(b); err != nil {
		t.Fatal(err)
	}
	close(both)
	got := map[string]int{}
	var order []string
	for got["a"]+got["b"] < 2*each {
		m := readMsg(t, peer, r)
		from := m["params"].(map[string]any)["from"].(string)
		got[from]++
		if len(order) == 0 || order[len(order)-1] != from {
			order = append(order, from)
		}
	}
	if got["a"] != each || got["b"] != each {
		t.Fatalf("frames from a and b: %v, want %d each", got, each)
	}
	if len(order) < 4 {
		t.Fatalf("the sources' frames came in runs %v: one took the window while the other waited", order)
	}
	// Each Pull told of itself before it queued frames, so every one is in the
	// channel by now. Drain it rather than close it: a write through writev is no
	// synchronisation to the race detector, so a close here would race the sends.
	for len(pulled) > 0 {
		if name := <-pulled; name != "a" && name != "b" {
			t.Fatalf("pulled %q", name)
		}
	}
	c.Close()
	if err := c.Want(a); !errors.Is(err, ErrClosed) {
		t.Fatalf("Want after close: %v, want ErrClosed", err)
	}
}

// waitReleased waits, for at most 10 s, until the connection has written or
// discarded every paced byte it queued, and returns the count.
func waitReleased(t *testing.T, c *Conn) uint64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		queued, released := c.PacedBytes()
		if released > queued {
			t.Fatalf("released %d of %d queued paced bytes", released, queued)
		}
		if released == queued {
			return released
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, %d of %d queued paced bytes released", released, queued)
		}
		runtime.Gosched()
	}
}

// waitTaken waits, for at most 10 s, until c's writer runs and has taken every
// frame queued.
func waitTaken(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.out.mu.Lock()
		taken := c.out.writing && c.out.queued == 0
		c.out.mu.Unlock()
		if taken {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never took the frame")
		}
		runtime.Gosched()
	}
}

// TestPacedBytesTellWhenBorrowedFramesAreNoLongerRead: PacedBytes counts the bytes
// of paced frames queued, and releases them once written, or discarded when the
// connection closes, also those of a write blocked on a peer that does not read
// (the session's tail writes a block again only after that).
func TestPacedBytesTellWhenBorrowedFramesAreNoLongerRead(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{})
	frame := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"n":1}}` + "\n")
	if n, err := c.NotifyPacedFrames([][]byte{frame, frame}); n != 2 || err != nil {
		t.Fatalf("NotifyPacedFrames = %d, %v", n, err)
	}
	if queued, _ := c.PacedBytes(); queued != uint64(2*len(frame)) {
		t.Fatalf("queued %d bytes, want the %d of two frames", queued, 2*len(frame))
	}
	readMsg(t, peer, r)
	readMsg(t, peer, r)
	if got := waitReleased(t, c); got != uint64(2*len(frame)) {
		t.Fatalf("released %d bytes, want %d", got, 2*len(frame))
	}

	// A write that waits (at the gate) and frames queued behind it: the close
	// releases both, the first once its write gave up.
	g, _ := runGated(t, HandlerFunc(nil), Options{})
	payload := jsontext.Value(`{"n":1}`)
	if ok, err := g.NotifyPaced("session/update", payload); !ok || err != nil {
		t.Fatalf("NotifyPaced = %v, %v", ok, err)
	}
	waitTaken(t, g) // the writer waits at the gate
	for range 2 {
		if ok, err := g.NotifyPaced("session/update", payload); !ok || err != nil {
			t.Fatalf("NotifyPaced = %v, %v", ok, err)
		}
	}
	if queued, released := g.PacedBytes(); released != 0 || queued == 0 {
		t.Fatalf("before the close: %d of %d bytes released, want none", released, queued)
	}
	g.Close()
	waitReleased(t, g)
}

// stuckFramer is a gatedFramer whose writes return only once unstuck, closed or
// not: a write the kernel still reads frames from when the connection closes.
type stuckFramer struct {
	*gatedFramer
	unstick chan struct{}
}

func (f *stuckFramer) WriteFrame(msg []byte) error { return f.WriteFrames([][]byte{msg}) }

func (f *stuckFramer) WriteFrames([][]byte) error {
	<-f.unstick
	return ErrClosed
}

// TestPacedBytesDroppedAtCloseWaitForTheWriteUnderWay: frames queued behind a
// write that is still under way when the connection closes are dropped, but not
// released before that write returns: released passes a queued count only once
// everything queued before it is no longer read.
func TestPacedBytesDroppedAtCloseWaitForTheWriteUnderWay(t *testing.T) {
	f := &stuckFramer{gatedFramer: newGatedFramer(), unstick: make(chan struct{})}
	c := NewConn(f, HandlerFunc(nil), Options{Logger: slog.New(slog.DiscardHandler)})
	ran := make(chan struct{})
	go func() {
		c.Run()
		close(ran)
	}()
	if ok, err := c.NotifyPaced("session/update", jsontext.Value(`{"n":1}`)); !ok || err != nil {
		t.Fatalf("NotifyPaced = %v, %v", ok, err)
	}
	waitTaken(t, c) // the writer is stuck in its write
	first, _ := c.PacedBytes()
	big := jsontext.Value(`{"text":"` + strings.Repeat("x", 4000) + `"}`)
	if ok, err := c.NotifyPaced("session/update", big); !ok || err != nil {
		t.Fatalf("NotifyPaced = %v, %v", ok, err)
	}
	c.Close()
	if _, released := c.PacedBytes(); released >= first {
		t.Fatalf("%d bytes released, the write of the first %d still under way", released, first)
	}
	close(f.unstick)
	waitReleased(t, c)
	<-ran
}
