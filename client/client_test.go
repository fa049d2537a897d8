//go:build unix

package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// closeWithin closes c, and fails the test instead of hanging when Close does not
// return.
func closeWithin(t *testing.T, c *Client) {
	t.Helper()
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Error("Close did not return")
	}
}

// within returns the next value from ch, and fails the test when none comes.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30 s", what)
	}
	var zero T
	return zero
}

// connect dials socket, initializes, and opens a session of the default agent.
func connect(t *testing.T, socket string, opts ...Option) (*Client, string) {
	t.Helper()
	ctx := ctxFor(t)
	c, err := Dial(ctx, socket, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, c) })
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(ctx, NewSessionParams{AgentAlias: "default", KeepSiblings: true})
	if err != nil {
		t.Fatal(err)
	}
	return c, s.SessionID
}

// recorder collects updates; it is safe for concurrent use.
type recorder struct {
	mu sync.Mutex
	us []Update
}

func (r *recorder) add(u Update) {
	r.mu.Lock()
	r.us = append(r.us, u)
	r.mu.Unlock()
}

func (r *recorder) all() []Update {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.us)
}

func TestPromptStreamsEveryUpdateBeforeItReturns(t *testing.T) {
	c, sid := connect(t, sharedSocket)
	var rec recorder
	res, err := c.Prompt(ctxFor(t), sid, "/think pondering\nhello there", nil, rec.add)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopEndTurn || res.Text != "echo: hello there" {
		t.Fatalf("result %+v", res)
	}
	var text, thought strings.Builder
	var last uint64
	for _, u := range rec.all() {
		if u.SessionID != sid || u.Seq <= last || len(u.Raw) == 0 {
			t.Fatalf("update %+v after seq %d", u, last)
		}
		last = u.Seq
		switch u.Type {
		case AgentMessageChunk:
			text.WriteString(u.Text)
		case AgentThoughtChunk:
			thought.WriteString(u.Text)
		}
	}
	if text.String() != res.Text || thought.String() != "pondering" {
		t.Fatalf("streamed text %q, thought %q; result %q", text.String(), thought.String(), res.Text)
	}
	if c.LastSeq(sid) != last {
		t.Fatalf("LastSeq = %d, want %d", c.LastSeq(sid), last)
	}
}

func TestApprovalAnsweredFromTheUpdateCallback(t *testing.T) {
	c, sid := connect(t, sharedSocket)
	ctx := ctxFor(t)
	var approvals int
	res, err := c.Prompt(ctx, sid, `/tool shell {"command":"echo approved-run"}`, nil, func(u Update) {
		if u.Type == ApprovalRequest {
			approvals++
			if ok, err := c.Approve(ctx, sid, u.RequestID, AllowOnce); err != nil || !ok {
				t.Errorf("Approve = %v, %v", ok, err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if approvals != 1 || res.StopReason != StopEndTurn || !strings.Contains(res.Text, "shell -> approved-run") {
		t.Fatalf("%d approvals, result %+v", approvals, res)
	}
}

func TestCancelStopsTheRunningTurn(t *testing.T) {
	c, sid := connect(t, sharedSocket)
	ctx := ctxFor(t)
	res, err := c.Prompt(ctx, sid, `/tool shell {"command":"sleep 30"}`, nil, func(u Update) {
		if u.Type != ApprovalRequest {
			return
		}
		// Once approved, the turn runs the shell (30 s) until the cancel stops it.
		if ok, err := c.Approve(ctx, sid, u.RequestID, AllowOnce); err != nil || !ok {
			t.Errorf("Approve = %v, %v", ok, err)
		}
		go func() {
			if ok, err := c.Cancel(ctx, sid); err != nil || !ok {
				t.Errorf("Cancel = %v, %v", ok, err)
			}
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopCancelled {
		t.Fatalf("result %+v, want cancelled", res)
	}
}

func TestElicitationHandlerAnswersAskUser(t *testing.T) {
	var asked Elicitation
	c, sid := connect(t, sharedSocket, WithElicitationHandler(func(ctx context.Context, e Elicitation) (ElicitationResult, error) {
		asked = e
		return ElicitationResult{Action: "accept", Content: map[string]any{"answer": "blue"}}, nil
	}))
	ctx := ctxFor(t)
	res, err := c.Prompt(ctx, sid, `/tool ask_user {"question":"Which colour?","choices":["red","blue"]}`, nil, func(u Update) {
		if u.Type == ApprovalRequest {
			c.Approve(ctx, sid, u.RequestID, AllowOnce)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if asked.Message != "Which colour?" || !strings.Contains(string(asked.RequestedSchema), `"blue"`) {
		t.Fatalf("asked %+v", asked)
	}
	if !strings.Contains(res.Text, "ask_user -> blue") {
		t.Fatalf("result %+v", res)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	c, _ := connect(t, sharedSocket)
	_, err := c.Cancel(ctxFor(t), "no-such-session")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeSessionNotFound {
		t.Fatalf("Cancel of a missing session: %v", err)
	}
	_, err = c.Attach(ctxFor(t), "", 0, nil)
	if !errors.As(err, &e) || e.Code != CodeInvalidParams || !strings.Contains(string(e.Data), "sessionId") {
		t.Fatalf("Attach without id: %v", err)
	}
	err = c.Call(ctxFor(t), "no/such/method", nil, nil)
	if !errors.As(err, &e) || e.Code != CodeMethodNotFound {
		t.Fatalf("unknown method: %v", err)
	}
}

func TestAttachReplaysExactlyWhatWasMissed(t *testing.T) {
	a, sid := connect(t, sharedSocket)
	ctx := ctxFor(t)
	if _, err := a.Prompt(ctx, sid, "first", nil, nil); err != nil {
		t.Fatal(err)
	}
	seen := a.LastSeq(sid)
	var live recorder
	if _, err := a.Prompt(ctx, sid, "/think again\nsecond", nil, live.add); err != nil {
		t.Fatal(err)
	}

	b, err := Dial(ctx, sharedSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	var replay recorder
	res, err := b.Attach(ctx, sid, seen, replay.add)
	if err != nil {
		t.Fatal(err)
	}
	want, got := live.all(), replay.all()
	if res.Replayed != len(want) || len(got) != len(want) || res.LastSeq != want[len(want)-1].Seq {
		t.Fatalf("attach %+v replayed %d updates, want %d", res, len(got), len(want))
	}
	for i := range want {
		if string(got[i].Raw) != string(want[i].Raw) {
			t.Fatalf("replayed #%d %s, want %s", i, got[i].Raw, want[i].Raw)
		}
	}
	// Nothing was missed since: a second attach replays nothing.
	again, err := b.Attach(ctx, sid, b.LastSeq(sid), nil)
	if err != nil || again.Replayed != 0 {
		t.Fatalf("second attach %+v, %v", again, err)
	}
}

func TestDialWithoutDaemonNamesTheEndpoint(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	_, err := Dial(ctxFor(t), sock)
	var nd *NoDaemonError
	if !errors.As(err, &nd) || nd.Endpoint != sock || !strings.Contains(err.Error(), "zeroclaw daemon") {
		t.Fatalf("Dial = %v", err)
	}
}

func TestDialPlainWSIsRefused(t *testing.T) {
	_, err := Dial(ctxFor(t), "ws://127.0.0.1:9781/")
	if err == nil || !strings.Contains(err.Error(), "use wss://") {
		t.Fatalf("Dial = %v", err)
	}
}

func TestAutoStartedDaemonServesAndExitsAfterTheClientLeaves(t *testing.T) {
	home, err := os.MkdirTemp("", "zca")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	t.Setenv("HOME", home)
	t.Setenv("ZEROCLAW_SOCKET", "")
	t.Setenv("ZEROCLAW_CONFIG_DIR", "")
	t.Setenv("ZEROCLAW_DATA_DIR", "")
	ctx := ctxFor(t)
	if _, err := Dial(ctx, ""); !errors.As(err, new(*NoDaemonError)) {
		t.Fatalf("before auto-start: %v", err)
	}
	c, err := Dial(ctx, "", WithAutoStart(AutoStart{Executable: binary}))
	if err != nil {
		t.Fatal(err)
	}
	pid, ok := c.StartedDaemon()
	if !ok {
		t.Fatal("Dial did not report starting a daemon")
	}
	init, err := c.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if init.ServerPID != pid {
		t.Fatalf("serverPid %d, started %d", init.ServerPID, pid)
	}
	want := filepath.Join(home, ".zeroclaw", "data", "daemon.sock")
	if c.Endpoint() != want {
		t.Fatalf("endpoint %s, want %s", c.Endpoint(), want)
	}
	// A second client reuses it rather than starting another.
	c2, err := Dial(ctx, "", WithAutoStart(AutoStart{Executable: binary}))
	if err != nil {
		t.Fatal(err)
	}
	if _, started := c2.StartedDaemon(); started {
		t.Fatal("a second daemon was started")
	}
	c2.Close()
	c.Close()
	select {
	case <-c.started.exited:
	case <-time.After(15 * time.Second):
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("the ephemeral daemon did not exit after its clients left")
	}
	if _, err := os.Stat(filepath.Join(home, ".zeroclaw", "data", LogName)); err != nil {
		t.Fatalf("no daemon log: %v", err)
	}
}

func TestUploadToTheDaemonAndAttachToAPrompt(t *testing.T) {
	c, sid := connect(t, sharedSocket)
	path := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(path, []byte(strings.Repeat("x", 3<<20)), 0o600) // three chunks
	var calls int
	entry, err := c.Upload(ctxFor(t), sid, path, func(done, total int64) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if entry.SizeBytes != 3<<20 || !strings.HasPrefix(entry.RefID, "sha256:") || calls != 4 {
		t.Fatalf("entry %+v after %d progress calls", entry, calls)
	}
	res, err := c.Prompt(ctxFor(t), sid, "read this", []FileEntry{*entry}, nil)
	if err != nil || !strings.Contains(res.Text, entry.WorkspacePath) {
		t.Fatalf("prompt %+v, %v", res, err)
	}
}
