package tui

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

var update = flag.Bool("update", false, "rewrite the golden screens in testdata")

// fakeBackend is a scripted daemon: it records calls and answers from its tables.
type fakeBackend struct {
	mu       sync.Mutex
	calls    []string // "method params-json"
	answers  map[string]any
	errs     map[string]error
	sessions []client.ListedSession
	prompt   func(text string, push func(client.Update)) *client.PromptResult
	attach   []client.Update
}

func newFake() *fakeBackend {
	return &fakeBackend{answers: map[string]any{}, errs: map[string]error{}}
}

func (f *fakeBackend) record(method string, params any) {
	b, _ := json.Marshal(params, json.Deterministic(true))
	f.mu.Lock()
	f.calls = append(f.calls, method+" "+string(b))
	f.mu.Unlock()
}

func (f *fakeBackend) called(prefix string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func (f *fakeBackend) Prompt(ctx context.Context, sid, text string, att []client.FileEntry, push func(client.Update)) (*client.PromptResult, error) {
	f.record("session/prompt", map[string]any{"sessionId": sid, "prompt": text})
	if f.prompt != nil {
		return f.prompt(text, push), nil
	}
	return &client.PromptResult{SessionID: sid, StopReason: client.StopEndTurn}, nil
}

func (f *fakeBackend) Cancel(ctx context.Context, sid string) (bool, error) {
	f.record("session/cancel", map[string]any{"sessionId": sid})
	return true, nil
}

func (f *fakeBackend) Approve(ctx context.Context, sid, req, decision string) (bool, error) {
	f.record("session/approve", map[string]any{"sessionId": sid, "requestId": req, "decision": decision})
	return true, nil
}

func (f *fakeBackend) ListSessions(ctx context.Context, limit int, cursor string) ([]client.ListedSession, string, error) {
	return f.sessions, "", nil
}

func (f *fakeBackend) NewSession(ctx context.Context, p client.NewSessionParams) (*client.Session, error) {
	f.record("session/new", p)
	sid := p.SessionID
	if sid == "" {
		sid = "s-new"
	}
	return &client.Session{SessionID: sid, AgentAlias: p.AgentAlias}, nil
}

func (f *fakeBackend) Attach(ctx context.Context, sid string, after uint64, push func(client.Update)) (*client.AttachResult, error) {
	f.record("session/attach", map[string]any{"sessionId": sid, "afterSeq": after})
	for _, u := range f.attach {
		u.SessionID = sid
		push(u)
	}
	return &client.AttachResult{SessionID: sid, Replayed: len(f.attach)}, nil
}

func (f *fakeBackend) Call(ctx context.Context, method string, params, result any) error {
	f.record(method, params)
	f.mu.Lock()
	err, ans := f.errs[method], f.answers[method]
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if ans == nil {
		return &client.Error{Code: client.CodeMethodNotFound, Message: "method not found: " + method}
	}
	if result != nil {
		b, _ := json.Marshal(ans)
		return json.Unmarshal(b, result)
	}
	return nil
}

func (f *fakeBackend) Upload(ctx context.Context, sid, path string, progress func(done, total int64)) (*client.FileEntry, error) {
	f.record("upload", map[string]any{"path": path})
	progress(0, 10)
	progress(10, 10)
	return &client.FileEntry{RefID: "f1", WorkspacePath: "/ws/" + filepath.Base(path), SizeBytes: 10}, nil
}

// ui is a model under test with its fake daemon. Commands the model returns are run
// at once and their messages fed back, as the program would; the spinner's clock is
// stopped.
type ui struct {
	t    *testing.T
	m    *Model
	b    *fakeBackend
	quit bool
}

func newUI(t *testing.T, w, h int) *ui {
	t.Helper()
	m := New(Options{Agent: "default", NoColor: true, Dark: true})
	m.after = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	u := &ui{t: t, m: m, b: newFake()}
	u.send(tea.WindowSizeMsg{Width: w, Height: h})
	u.send(connectedMsg{b: u.b, s: &client.Session{SessionID: "s1", AgentAlias: "default"}})
	return u
}

// send feeds msg to the model and runs the commands it returns, to the end.
func (u *ui) send(msg tea.Msg) {
	u.t.Helper()
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		if _, ok := msg.(tea.QuitMsg); ok {
			u.quit = true
			continue
		}
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				if c != nil {
					queue = append(queue, c())
				}
			}
			continue
		}
		if strings.Contains(fmt.Sprintf("%T", msg), "cursor.") {
			continue // a text field's cursor blinking: a clock the tests stop
		}
		_, cmd := u.m.Update(msg)
		if cmd != nil {
			if next := cmd(); next != nil {
				queue = append(queue, next)
			}
		}
	}
}

// push delivers daemon updates of session s1 and flushes them as a frame would.
func (u *ui) push(us ...client.Update) {
	for _, x := range us {
		if x.SessionID == "" {
			x.SessionID = "s1"
		}
		if x.Raw == nil {
			x.Raw, _ = json.Marshal(x)
		}
		u.m.inbox.push(x)
	}
	u.send(flushMsg{})
}

// pushRaw delivers an update given as its JSON params (fields client.Update lacks).
func (u *ui) pushRaw(s string) {
	var x client.Update
	if err := json.Unmarshal([]byte(s), &x); err != nil {
		u.t.Fatal(err)
	}
	x.Raw = jsontext.Value(s)
	u.push(x)
}

func (u *ui) typeText(s string) {
	for _, r := range s {
		u.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func (u *ui) press(k string) {
	codes := map[string]tea.Key{
		"enter": {Code: tea.KeyEnter}, "tab": {Code: tea.KeyTab}, "esc": {Code: tea.KeyEscape},
		"up": {Code: tea.KeyUp}, "down": {Code: tea.KeyDown}, "pgup": {Code: tea.KeyPgUp}, "pgdown": {Code: tea.KeyPgDown},
		"ctrl+c": {Code: 'c', Mod: tea.ModCtrl}, "ctrl+o": {Code: 'o', Mod: tea.ModCtrl},
		"alt+enter": {Code: tea.KeyEnter, Mod: tea.ModAlt}, "backspace": {Code: tea.KeyBackspace},
	}
	key, ok := codes[k]
	if !ok {
		if len([]rune(k)) != 1 {
			u.t.Fatalf("no key %q", k)
		}
		key = tea.Key{Code: []rune(k)[0], Text: k}
	}
	u.send(tea.KeyPressMsg(key))
}

// screen is the screen as text, without escape sequences and trailing blanks.
func (u *ui) screen() string {
	lines := strings.Split(stripANSI(u.m.View().Content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// golden compares the screen with testdata/NAME.golden (rewritten with -update),
// and checks that it fits the window.
func (u *ui) golden(name string) {
	u.t.Helper()
	got := u.screen()
	u.fits()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			u.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		u.t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		u.t.Errorf("screen %s differs from the golden one:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// fits checks that the screen has exactly the window's lines, none wider than it.
func (u *ui) fits() {
	u.t.Helper()
	lines := strings.Split(u.m.View().Content, "\n")
	if len(lines) != u.m.height {
		u.t.Errorf("the screen has %d lines, the window %d:\n%s", len(lines), u.m.height, u.screen())
	}
	for i, l := range lines {
		if w := ansiWidth(l); w > u.m.width {
			u.t.Errorf("line %d is %d cells wide, the window %d: %q", i, w, u.m.width, stripANSI(l))
		}
	}
}

func (u *ui) wantScreen(s string) {
	u.t.Helper()
	if !strings.Contains(u.screen(), s) {
		u.t.Fatalf("the screen lacks %q:\n%s", s, u.screen())
	}
}

func (u *ui) wantCall(prefix string) {
	u.t.Helper()
	if !u.b.called(prefix) {
		u.t.Fatalf("no call %q; calls:\n%s", prefix, strings.Join(u.b.calls, "\n"))
	}
}

func chunk(turn, text string) client.Update {
	return client.Update{TurnID: turn, Type: client.AgentMessageChunk, Text: text}
}

func lines(n int, f string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, f+"\n", i)
	}
	return b.String()
}
