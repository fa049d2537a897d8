//go:build unix

package client

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/harness"
)

// events collects connection events in a channel.
func events() (chan ConnectionEvent, Option) {
	ch := make(chan ConnectionEvent, 16)
	return ch, WithReconnect(Reconnect{Notify: func(e ConnectionEvent) { ch <- e }})
}

func expectEvent(t *testing.T, ch chan ConnectionEvent, kind string) ConnectionEvent {
	t.Helper()
	e := within(t, ch, kind+" event")
	if e.Kind != kind {
		t.Fatalf("event %+v, want %s", e, kind)
	}
	return e
}

func TestAPromptSurvivesALostConnectionAndItsTurnIsShownOnce(t *testing.T) {
	p := harness.NewProxy(t, sharedSocket)
	evs, opt := events()
	c, sid := connect(t, p.Path, opt)
	ctx := ctxFor(t)
	asked := make(chan Update, 1)
	var rec recorder
	done := make(chan *PromptResult, 1)
	go func() {
		r, err := c.Prompt(ctx, sid, "/tool shell {\"command\":\"echo once\"}\nafter the drop", nil, func(u Update) {
			rec.add(u)
			if u.Type == ApprovalRequest {
				asked <- u
			}
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	approval := within(t, asked, "approval request")
	p.Cut() // the turn waits for its approval in the daemon meanwhile
	if e := expectEvent(t, evs, ConnectionLost); !e.InFlight {
		t.Fatalf("lost: %+v", e)
	}
	if e := expectEvent(t, evs, Reconnected); e.Restarted {
		t.Fatalf("reconnected to the same daemon start, but: %+v", e)
	}
	if ok, err := c.Approve(ctx, sid, approval.RequestID, AllowOnce); err != nil || !ok {
		t.Fatalf("Approve after the reconnect = %v, %v", ok, err)
	}
	r := within(t, done, "prompt answer")
	if r == nil || r.StopReason != StopEndTurn || r.Restarted || !strings.Contains(r.Text, "shell -> once") {
		t.Fatalf("result %+v", r)
	}
	var last uint64
	counts := map[string]int{}
	for _, u := range rec.all() {
		if u.Seq <= last {
			t.Fatalf("update seq %d after %d: shown twice or out of order", u.Seq, last)
		}
		last = u.Seq
		counts[u.Type]++
	}
	if counts[ApprovalRequest] != 1 || counts[ToolResult] != 1 || counts[ToolCall] != 1 {
		t.Fatalf("updates by type %v", counts)
	}
	var msgs struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := c.Call(ctx, "session/messages", map[string]any{"sessionId": sid}, &msgs); err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, m := range msgs.Messages {
		if m.Role == "user" {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("%d turns in the transcript, want 1", users)
	}
}

func TestACancelAskedForWhileReconnectingCancelsTheTurnOnceConnected(t *testing.T) {
	p := harness.NewProxy(t, sharedSocket)
	evs, opt := events()
	c, sid := connect(t, p.Path, opt)
	ctx := ctxFor(t)
	running := make(chan struct{}, 1)
	done := make(chan *PromptResult, 1)
	go func() {
		r, err := c.Prompt(ctx, sid, `/tool shell {"command":"sleep 30"}`, nil, func(u Update) {
			switch u.Type {
			case ApprovalRequest:
				c.Approve(ctx, sid, u.RequestID, AllowOnce)
			case ToolCall:
				running <- struct{}{}
			}
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	within(t, running, "running tool call")
	p.Refusing(true)
	p.Cut()
	expectEvent(t, evs, ConnectionLost)
	cancelled := make(chan bool, 1)
	go func() {
		ok, err := c.Cancel(ctx, sid) // waits for the connection
		if err != nil {
			t.Error(err)
		}
		cancelled <- ok
	}()
	// The cancel is kept for the next connection (the client is still refused).
	for deadline := time.Now().Add(30 * time.Second); !c.cancelPending(sid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cancel was not kept while reconnecting")
		}
	}
	p.Refusing(false)
	expectEvent(t, evs, Reconnected)
	if ok := within(t, cancelled, "cancel answer"); !ok {
		t.Fatal("the cancel asked for while reconnecting found no turn")
	}
	if r := within(t, done, "prompt answer"); r == nil || r.StopReason != StopCancelled {
		t.Fatalf("result %+v, want cancelled", r)
	}
}

func (c *Client) cancelPending(sid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resume.cancel[sid]
}

func TestAClientThatCannotReconnectGivesUpAndIsOver(t *testing.T) {
	p := harness.NewProxy(t, sharedSocket)
	evs := make(chan ConnectionEvent, 16)
	c, sid := connect(t, p.Path, WithReconnect(Reconnect{
		Notify: func(e ConnectionEvent) { evs <- e },
		GiveUp: 100 * time.Millisecond,
	}))
	p.Refusing(true)
	p.Cut()
	expectEvent(t, evs, ConnectionLost)
	if e := expectEvent(t, evs, GaveUp); e.Err == nil {
		t.Fatalf("gave up without saying why: %+v", e)
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done is still open after giving up")
	}
	if _, err := c.Cancel(ctxFor(t), sid); err != ErrClosed {
		t.Fatalf("a call after giving up: %v, want ErrClosed", err)
	}
}

func TestAReconnectRecoversASessionWhoseUpdatesLagged(t *testing.T) {
	p := harness.NewProxy(t, sharedSocket)
	evs, opt := events()
	// One update may wait: a callback that holds the first makes the third lag.
	c, sid := connect(t, p.Path, opt, WithUpdateQueue(1, 0))
	ctx := ctxFor(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // before the client's Close, should the test fail early
	lagged := make(chan struct{}, 1)
	approved := make(chan struct{}, 1)
	var rec recorder
	type answer struct {
		r   *PromptResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		first := true
		r, err := c.Prompt(ctx, sid, "/think a\n/tool shell {\"command\":\"echo lagged\"}\nhi", nil, func(u Update) {
			if first {
				first = false
				<-release
			}
			switch u.Type {
			case UpdateLagged:
				select {
				case lagged <- struct{}{}:
				default:
				}
				return
			case ApprovalRequest:
				go func() {
					if ok, err := c.Approve(ctx, sid, u.RequestID, AllowOnce); err != nil || !ok {
						t.Errorf("Approve = %v, %v", ok, err)
					}
					approved <- struct{}{}
				}()
			}
			rec.add(u)
		})
		done <- answer{r, err}
	}()
	// The turn waits for its approval, whose request was discarded: the session lags.
	if !c.queue.waitLagged(sid, 30*time.Second) {
		t.Fatal("the session never lagged")
	}
	releaseAll()
	within(t, lagged, "lagged update")
	// A new connection delivers what the lagging one discarded, the approval request
	// among it. (Its replay may not fit in the queue of one either: then it lags
	// again, and the next connection goes on from there.)
	for approvedYet := false; !approvedYet; {
		p.Cut()
		expectEvent(t, evs, ConnectionLost)
		expectEvent(t, evs, Reconnected)
		select {
		case <-approved:
			approvedYet = true
		case <-lagged:
		case <-time.After(30 * time.Second):
			t.Fatalf("the discarded approval_request never came; updates: %+v", rec.all())
		}
	}
	a := within(t, done, "prompt answer")
	var le *LaggedError
	if a.r == nil || (a.err != nil && !errors.As(a.err, &le)) || a.r.StopReason != StopEndTurn {
		// The turn's later stream may lag again (one update may wait): that is said.
		t.Fatalf("Prompt after the reconnect: %+v, %v", a.r, a.err)
	}
	var last uint64
	for _, u := range rec.all() {
		if u.Seq <= last {
			t.Fatalf("seq %d after %d: shown twice", u.Seq, last)
		}
		last = u.Seq
	}
}

// A reconnect is told before the prompt in flight is sent again: the prompt's
// answer comes after Notify(Reconnected) returned, so a client that reports both
// and then exits (zeroclaw chat) never loses the first. Here the turn ended while
// the client was away, so the prompt sent again is answered at once: were the
// event told after the connection went back into use, the answer would come while
// Notify still runs.
func TestTheReconnectIsToldBeforeThePromptInFlightIsAnswered(t *testing.T) {
	p := harness.NewProxy(t, sharedSocket)
	answered := make(chan *PromptResult, 1)
	lost := make(chan struct{}, 1)
	early := make(chan bool, 1)
	c, sid := connect(t, p.Path, WithReconnect(Reconnect{Notify: func(e ConnectionEvent) {
		switch e.Kind {
		case ConnectionLost:
			lost <- struct{}{}
		case Reconnected:
			// A bounded wait for what must not happen: the answer, while the event
			// is being told.
			select {
			case r := <-answered:
				answered <- r
				early <- true
			case <-time.After(500 * time.Millisecond):
				early <- false
			}
		}
	}}))
	ctx := ctxFor(t)
	asked := make(chan Update, 1)
	go func() {
		r, err := c.Prompt(ctx, sid, "/tool shell {\"command\":\"echo done\"}\nthen", nil, func(u Update) {
			if u.Type == ApprovalRequest {
				asked <- u
			}
		})
		if err != nil {
			t.Error(err)
		}
		answered <- r
	}()
	approval := within(t, asked, "approval request")
	p.Refusing(true)
	p.Cut()
	within(t, lost, "lost event")
	other, err := Dial(ctx, sharedSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.Approve(ctx, sid, approval.RequestID, AllowOnce); err != nil || !ok {
		t.Fatalf("Approve from another client = %v, %v", ok, err)
	}
	// A prompt queues behind the running turn: its answer says that turn has ended.
	if _, err := other.Prompt(ctx, sid, "after it", nil, nil); err != nil {
		t.Fatal(err)
	}
	p.Refusing(false)
	if within(t, early, "reconnected event") {
		t.Fatal("the prompt in flight was answered before the reconnect was told")
	}
	if r := within(t, answered, "prompt answer"); r == nil || r.StopReason != StopEndTurn || !strings.Contains(r.Text, "shell -> done") {
		t.Fatalf("result %+v", r)
	}
}

// A connection that drops right after the reconnect that made it (while Reconnected
// is being told, before the client takes it into use) is one more loss: told, and
// reconnected from, like any other. The client once installed the dead connection
// and was wedged: no event, every call waiting, and Close never returned.
func TestAConnectionLostBeforeTheReconnectCompletesIsReconnectedAgain(t *testing.T) {
	p := harness.NewProxy(t, sharedSocket)
	evs := make(chan ConnectionEvent, 16)
	ended := make(chan struct{}, 1)
	first := true
	c, sid := connect(t, p.Path, WithReconnect(Reconnect{Notify: func(e ConnectionEvent) {
		if e.Kind == Reconnected && first {
			first = false
			select { // a connection of an earlier, failed attempt
			case <-ended:
			default:
			}
			p.Cut()
			select { // the connection just told of has ended, and is not in use yet
			case <-ended:
			case <-time.After(30 * time.Second):
				t.Error("the dropped connection did not end")
			}
		}
		evs <- e
	}}), func(o *options) {
		o.endedEarly = func() {
			select {
			case ended <- struct{}{}:
			default:
			}
		}
	})
	p.Cut()
	for _, kind := range []string{ConnectionLost, Reconnected, ConnectionLost, Reconnected} {
		expectEvent(t, evs, kind)
	}
	r, err := c.Prompt(ctxFor(t), sid, "still here", nil, nil)
	if err != nil || r.StopReason != StopEndTurn {
		t.Fatalf("a prompt after the second reconnect: %+v, %v", r, err)
	}
}
