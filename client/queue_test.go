//go:build unix

package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func raw(n int) []byte { return []byte(strings.Repeat("x", n)) }

// The queue holds at most its frames or bytes; what does not fit is discarded for
// that session from then on, behind one lagged notice, and other sessions go on.
func TestUpdateQueueIsBoundedAndSaysWhatItDiscarded(t *testing.T) {
	for _, tt := range []struct {
		name          string
		frames, bytes int
		size          int // of each update's Raw
		fit           int // updates of session a queued before the overflow
	}{
		{"frames", 4, 1 << 20, 10, 4},
		{"bytes", 100, 250, 100, 2},
		{"one update larger than the bound still passes alone", 100, 50, 80, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			q := newUpdateQueue(tt.frames, tt.bytes, slog.New(slog.NewTextHandler(&log, nil)))
			for i := 1; i <= 10; i++ {
				q.push(Update{SessionID: "a", Seq: uint64(i), Type: "agent_message_chunk", Raw: raw(tt.size)})
			}
			if after, ok := q.laggedAt("a"); !ok || after != uint64(tt.fit) {
				t.Fatalf("laggedAt(a) = %d, %v; want %d, true", after, ok, tt.fit)
			}
			// Said once, when it happened, before anything was delivered.
			if n := strings.Count(log.String(), "update queue is full"); n != 1 ||
				!strings.Contains(log.String(), fmt.Sprintf("session=a afterSeq=%d queued=%d", tt.fit, tt.fit)) {
				t.Fatalf("the log at the overflow:\n%s", log.String())
			}
			if _, ok := q.laggedAt("b"); ok {
				t.Fatal("session b lags without having sent anything")
			}
			var got []string
			done := make(chan struct{})
			go func() {
				q.run(func(u Update) { got = append(got, fmt.Sprintf("%s:%d:%s:%d", u.SessionID, u.Seq, u.Type, u.AfterSeq)) })
				close(done)
			}()
			q.waitDelivered(ctxFor(t), q.pushed())
			// Room again: the lagged session stays discarded, another one is queued.
			q.push(Update{SessionID: "a", Seq: 11, Type: "agent_message_chunk", Raw: raw(tt.size)})
			q.push(Update{SessionID: "b", Seq: 1, Type: "agent_message_chunk", Raw: raw(tt.size)})
			q.close()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("run did not end")
			}
			var want []string
			for i := 1; i <= tt.fit; i++ {
				want = append(want, fmt.Sprintf("a:%d:agent_message_chunk:0", i))
			}
			want = append(want, fmt.Sprintf("a:0:lagged:%d", tt.fit), "b:1:agent_message_chunk:0")
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("delivered\n%v\nwant\n%v", got, want)
			}
			if q.bytes != 0 {
				t.Errorf("%d bytes still counted in an empty queue", q.bytes)
			}
		})
	}
}

// End to end: a callback that stalls while a turn streams makes the client discard
// the session's updates, never silently: the callback gets every update up to
// AfterSeq, then "lagged"; Prompt returns its result and a *LaggedError; and a new
// connection's Attach(afterSeq) delivers the rest, with no gap and no duplicate.
func TestASlowCallbackLagsVisiblyAndAttachRecoversTheRest(t *testing.T) {
	ctx := ctxFor(t)
	a, sid := connect(t, sharedSocket, WithUpdateQueue(8, 0))
	before := a.LastSeq(sid)
	release := make(chan struct{})
	var got recorder
	onUpdate := func(u Update) {
		if len(got.all()) == 0 {
			<-release // stall on the first update until the queue has overflowed
		}
		got.add(u)
	}
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("/think thought %d", i))
	}
	type answer struct {
		r   *PromptResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := a.Prompt(ctx, sid, strings.Join(append(lines, "hello"), "\n"), nil, onUpdate)
		done <- answer{r, err}
	}()
	if !a.queue.waitLagged(sid, 30*time.Second) {
		t.Fatal("the queue never overflowed")
	}
	close(release)
	res := <-done
	var lag *LaggedError
	if !errors.As(res.err, &lag) || lag.SessionID != sid || res.r == nil || res.r.StopReason != StopEndTurn {
		t.Fatalf("Prompt = %+v, %v; want its result and a *LaggedError", res.r, res.err)
	}
	seen := got.all()
	last := seen[len(seen)-1]
	if last.Type != UpdateLagged || last.AfterSeq != lag.AfterSeq || seen[len(seen)-2].Seq != lag.AfterSeq {
		t.Fatalf("the callback's last updates %+v, %+v: want the update at AfterSeq %d, then lagged", seen[len(seen)-2], last, lag.AfterSeq)
	}
	if len(seen) > 8+1+1 { // the bound, the one the callback held, the notice
		t.Errorf("the callback got %d updates through a queue of 8", len(seen))
	}

	// Recovery on a new connection.
	b, _ := connect(t, sharedSocket)
	var rest recorder
	if _, err := b.Attach(ctx, sid, lag.AfterSeq, rest.add); err != nil {
		t.Fatal(err)
	}
	// The whole turn, as a third connection replays it, is exactly what a saw plus
	// what b recovered.
	c, _ := connect(t, sharedSocket)
	var all recorder
	if _, err := c.Attach(ctx, sid, before, all.add); err != nil {
		t.Fatal(err)
	}
	var joined []string
	for _, u := range append(seen[:len(seen)-1], rest.all()...) {
		joined = append(joined, string(u.Raw))
	}
	var want []string
	for _, u := range all.all() {
		want = append(want, string(u.Raw))
	}
	if strings.Join(joined, "\n") != strings.Join(want, "\n") {
		t.Fatalf("delivered then recovered %d updates, the turn has %d:\n%s\nwant\n%s", len(joined), len(want),
			strings.Join(joined, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("the slow callback got %d updates, then lagged; attach recovered %d of the turn's %d", len(seen)-1, len(rest.all()), len(want))
	if len(want) < 40 {
		t.Fatalf("the turn had only %d updates: the test proves nothing", len(want))
	}
}

// waitLagged waits, woken by the queue's own broadcasts (every push, the lagging one
// among them), until sessionID lags; false after timeout or once the queue stopped.
func (q *updateQueue) waitLagged(sessionID string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return q.waitUntil(ctx, func() bool {
		_, lagged := q.lagged[sessionID]
		return lagged
	})
}
