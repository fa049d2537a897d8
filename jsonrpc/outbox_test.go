package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// gatedFramer is a Framer whose peer is the test: frames to read are handed in on a
// channel, and every write blocks until the test opens the gate, so a test decides
// exactly when the writer makes progress.
type gatedFramer struct {
	in     chan []byte
	gate   chan struct{} // a write waits for one token
	mu     sync.Mutex
	cond   sync.Cond // broadcast after each write
	writes [][]byte  // one entry per write call, the frames joined by newlines
	closed chan struct{}
	once   sync.Once
}

func newGatedFramer() *gatedFramer {
	f := &gatedFramer{in: make(chan []byte, 256), gate: make(chan struct{}, 1024), closed: make(chan struct{})}
	f.cond.L = &f.mu
	return f
}

func (f *gatedFramer) ReadFrame() ([]byte, error) {
	select {
	case b, ok := <-f.in:
		if !ok {
			return nil, io.EOF
		}
		return b, nil
	case <-f.closed:
		return nil, ErrClosed
	}
}

func (f *gatedFramer) WriteFrame(msg []byte) error { return f.WriteFrames([][]byte{msg}) }

func (f *gatedFramer) WriteFrames(msgs [][]byte) error {
	select {
	case <-f.gate:
	case <-f.closed:
		return ErrClosed
	}
	var b strings.Builder
	for _, m := range msgs {
		b.Write(m)
		b.WriteByte('\n')
	}
	f.mu.Lock()
	f.writes = append(f.writes, []byte(b.String()))
	f.cond.Broadcast()
	f.mu.Unlock()
	return nil
}

func (f *gatedFramer) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// written returns every frame written so far, in order.
func (f *gatedFramer) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frames()
}

// waitWritten waits until n frames have been written and returns them.
func (f *gatedFramer) waitWritten(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.frames()) < n {
		f.cond.Wait()
	}
	return f.frames()
}

func (f *gatedFramer) frames() []string {
	var out []string
	for _, w := range f.writes {
		out = append(out, strings.Split(strings.TrimSuffix(string(w), "\n"), "\n")...)
	}
	return out
}

func runGated(t *testing.T, h Handler, opts Options) (*Conn, *gatedFramer) {
	t.Helper()
	f := newGatedFramer()
	opts.Logger = slog.New(slog.DiscardHandler)
	c := NewConn(f, h, opts)
	ran := make(chan struct{})
	go func() {
		c.Run()
		close(ran)
	}()
	t.Cleanup(func() {
		c.Close()
		<-ran
	})
	return c, f
}

func TestNotifyNeverWaitsAndReportsAFullQueue(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{OutboundFrames: 8})
	// The first notification is taken by the writer, which then blocks on the gate:
	// it still counts until written.
	for i := range 8 {
		if err := c.Notify("session/update", map[string]int{"n": i}); err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
	}
	if err := c.Notify("session/update", map[string]int{"n": 8}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("ninth notification into a queue of 8: %v, want ErrQueueFull", err)
	}
	room := c.Room()
	select {
	case <-room:
		t.Fatal("Room is ready while the queue is full")
	default:
	}
	// The writer took the first notification, or more, before it blocked; two
	// writes take all eight.
	f.gate <- struct{}{}
	f.gate <- struct{}{}
	<-room
	if err := c.Notify("session/update", map[string]int{"n": 9}); err != nil {
		t.Fatalf("notification after Room: %v", err)
	}
	f.gate <- struct{}{}
	f.waitWritten(9)
	var got []string
	for _, line := range f.written() {
		var m struct {
			Params struct {
				N int `json:"n"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(m.Params.N))
	}
	if strings.Join(got, ",") != "0,1,2,3,4,5,6,7,9" {
		t.Fatalf("notifications written %v, want 0..7 then 9 in order", got)
	}
}

func TestTheByteBoundFillsFirst(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{OutboundBytes: 1000})
	big := jsontext.Value(`{"text":"` + strings.Repeat("x", 400) + `"}`)
	for i := range 2 {
		if err := c.Notify("session/update", big); err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
	}
	if err := c.Notify("session/update", big); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third 450-byte notification into 1000 bytes: %v, want ErrQueueFull", err)
	}
	f.gate <- struct{}{}
	f.gate <- struct{}{}
	<-c.Room()
	f.waitWritten(2)
}

func TestALoneNotificationLargerThanTheBoundStillGoes(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{OutboundBytes: 1000})
	huge := jsontext.Value(`{"text":"` + strings.Repeat("y", 2000) + `"}`)
	if err := c.Notify("session/update", huge); err != nil {
		t.Fatalf("a lone notification larger than the bound, into an empty queue: %v", err)
	}
	if err := c.Notify("session/update", nil); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a notification behind it: %v, want ErrQueueFull", err)
	}
	f.gate <- struct{}{}
	if w := f.waitWritten(1); !strings.Contains(w[0], "yyyy") {
		t.Fatalf("written %.80q", w)
	}
}

func TestResponsesAreNeverRefusedByAFullQueue(t *testing.T) {
	h := HandlerFunc(func(context.Context, *Request) (any, error) { return "answer", nil })
	c, f := runGated(t, h, Options{OutboundFrames: 2})
	c.Notify("n", nil)
	c.Notify("n", nil)
	if err := c.Notify("n", nil); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third notification: %v", err)
	}
	f.in <- []byte(`{"jsonrpc":"2.0","method":"m","id":1}`)
	for range 3 {
		f.gate <- struct{}{}
	}
	f.waitWritten(3)
	w := f.written()
	if !strings.Contains(w[len(w)-1], `"result":"answer"`) {
		t.Fatalf("written %q, want the answer after the two notifications", w)
	}
}

func TestAnswersAndNotificationsLeaveInTheOrderTheyWereSent(t *testing.T) {
	var c *Conn
	h := HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		for i := range 3 {
			if err := c.Notify("progress", map[string]any{"id": string(req.ID), "i": i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	c, f := runGated(t, h, Options{})
	for i := range 20 {
		f.in <- fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"m","id":%d}`, i)
	}
	for range 80 {
		f.gate <- struct{}{}
	}
	f.waitWritten(80)
	seen := map[string]int{} // notifications seen per request id
	for _, line := range f.written() {
		var m struct {
			ID     jsontext.Value `json:"id"`
			Result string         `json:"result"`
			Params struct {
				ID string `json:"id"`
				I  int    `json:"i"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %q (frames interleaved?)", err, line)
		}
		if m.Result == "done" {
			if seen[string(m.ID)] != 3 {
				t.Fatalf("answer to %s after %d of its 3 notifications", m.ID, seen[string(m.ID)])
			}
			continue
		}
		if m.Params.I != seen[m.Params.ID] {
			t.Fatalf("notification %d of %s came as number %d", m.Params.I, m.Params.ID, seen[m.Params.ID])
		}
		seen[m.Params.ID]++
	}
}

func TestPriorityRequestsDoNotWaitForTheInFlightSlots(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, MaxInFlight)
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "prompt":
			started <- struct{}{}
			<-release
			return "prompt done", nil
		case "cancel":
			close(release)
			return "cancelled", nil
		}
		return req.Method, nil
	})
	priority := func(r *Request) bool { return r.Method == "cancel" || r.Method == "approve" }
	_, peer, r := pair(t, h, Options{Schedule: func(r *Request) Schedule {
		if priority(r) {
			return Priority
		}
		return Spawn
	}})
	var batch strings.Builder
	for i := range MaxInFlight {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","method":"prompt","id":%d}`+"\n", i)
	}
	write(t, peer, strings.TrimSuffix(batch.String(), "\n"))
	for range MaxInFlight {
		<-started // every slot is held by a running prompt
	}
	write(t, peer, `{"jsonrpc":"2.0","method":"approve","id":"a"}`)
	if m := readMsg(t, peer, r); m["id"] != "a" || m["result"] != "approve" {
		t.Fatalf("with all slots held, approve got %v", m)
	}
	write(t, peer, `{"jsonrpc":"2.0","method":"cancel","id":"c"}`)
	cancelled, prompts := false, 0
	for !cancelled || prompts < MaxInFlight { // the prompts may end before cancel answers
		switch m := readMsg(t, peer, r); {
		case m["id"] == "c" && m["result"] == "cancelled":
			cancelled = true
		case m["result"] == "prompt done":
			prompts++
		default:
			t.Fatalf("got %v, want the answers to cancel and the prompts", m)
		}
	}
}

func TestEveryRequestHasItsOwnContext(t *testing.T) {
	ctxs := make(chan context.Context, 2)
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		ctxs <- ctx
		if req.Method == "slow" {
			<-release
		}
		return nil, nil
	})
	c, peer, r := pair(t, h, Options{})
	write(t, peer, `{"jsonrpc":"2.0","method":"quick","id":1}`)
	readMsg(t, peer, r)
	quick := <-ctxs
	<-quick.Done() // ended with its request
	write(t, peer, `{"jsonrpc":"2.0","method":"slow","id":2}`)
	slow := <-ctxs
	if slow.Err() != nil || slow == quick {
		t.Fatalf("the running request's context: %v (shared with the finished one: %v)", slow.Err(), slow == quick)
	}
	c.Close()
	<-slow.Done() // the connection closed under it
	if !errors.Is(slow.Err(), context.Canceled) {
		t.Fatalf("slow request's context after close: %v", slow.Err())
	}
	close(release)
}

func TestFramesFromManySendersNeverInterleave(t *testing.T) {
	var conn atomic.Pointer[Conn]
	h := HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		conn.Load().Notify("note", jsontext.Value(`{"pad":"`+strings.Repeat("n", 3000)+`"}`))
		return strings.Repeat("r", 5000), nil
	})
	c, peer, _ := pair(t, h, Options{OutboundFrames: 1 << 20, OutboundBytes: 1 << 30})
	conn.Store(c)
	const n = 300
	go func() {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"m","id":%d}`+"\n", i)
		}
		peer.Write([]byte(b.String()))
	}()
	sc := bufio.NewScanner(peer)
	sc.Buffer(nil, 1<<20)
	answers, notes := 0, 0
	for answers < n || notes < n {
		if !sc.Scan() {
			t.Fatalf("after %d answers and %d notifications: %v", answers, notes, sc.Err())
		}
		line := sc.Bytes()
		if !jsontext.Value(line).IsValid() {
			t.Fatalf("invalid frame %.80q…", line)
		}
		if strings.Contains(string(line), `"method":"note"`) {
			notes++
		} else {
			answers++
		}
	}
}

func TestOrderedRequestsAreServedOneAtATimeInFrameOrder(t *testing.T) {
	var running, overlaps atomic.Int32
	h := HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		return string(req.ID), nil
	})
	_, peer, r := pair(t, h, Options{Schedule: func(*Request) Schedule { return Ordered }})
	var batch strings.Builder
	for i := range 100 {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","method":"deep","id":%d}`+"\n", i)
	}
	write(t, peer, strings.TrimSuffix(batch.String(), "\n"))
	for i := range 100 {
		if m := readMsg(t, peer, r); m["id"] != float64(i) {
			t.Fatalf("answer %d: %v", i, m)
		}
	}
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d ordered requests ran while another did", n)
	}
}

func TestRoomAndNotifyAfterTheConnectionCloses(t *testing.T) {
	c, _ := runGated(t, HandlerFunc(nil), Options{OutboundFrames: 2})
	c.Notify("n", nil)
	c.Notify("n", nil)
	room := c.Room()
	c.Close()
	<-room // a waiter is never left behind by a closed connection
	<-c.Done()
	if err := c.Notify("n", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify after close: %v, want ErrClosed", err)
	}
}

func TestNotifyUnboundedGoesIntoAFullQueueInItsPlace(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{OutboundFrames: 4})
	for i := range 4 {
		if err := c.Notify("session/update", map[string]int{"n": i}); err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
	}
	if err := c.Notify("session/update", map[string]int{"n": 4}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("fifth notification into a queue of 4: %v, want ErrQueueFull", err)
	}
	if err := c.NotifyUnbounded("session/update", map[string]int{"n": 99}); err != nil {
		t.Fatalf("NotifyUnbounded into a full queue: %v", err)
	}
	for range 3 {
		f.gate <- struct{}{}
	}
	f.waitWritten(5)
	var got []string
	for _, line := range f.written() {
		var m struct {
			Params struct {
				N int `json:"n"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(m.Params.N))
	}
	if strings.Join(got, ",") != "0,1,2,3,99" {
		t.Fatalf("written %v, want 0..3 then 99", got)
	}
}
