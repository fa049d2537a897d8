//go:build unix

package acp

import (
	"bufio"
	"context"
	"encoding/json/v2"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/daemon"
)

// runDaemon runs the daemon in this process, with an echo agent "full" that runs
// tools without asking, until the test ends; it returns its socket.
func runDaemon(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zca") // short: a socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := "[agents.full]\nprovider = \"echo\"\nautonomy = \"full\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	// The daemon says READY=1 on NOTIFY_SOCKET once it serves, as to systemd.
	notifyAddr := filepath.Join(dir, "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyAddr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	getenv := func(k string) string {
		if k == "NOTIFY_SOCKET" {
			return notifyAddr
		}
		return ""
	}
	ctx, stop := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() {
		exited <- daemon.Run(ctx, daemon.Options{ConfigDir: dir, Getenv: getenv, Logger: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-exited; err != nil {
			t.Errorf("the daemon: %v", err)
		}
	})
	notify.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 256)
	for {
		n, err := notify.Read(buf)
		if err != nil {
			t.Fatalf("no READY=1 from the daemon: %v", err)
		}
		if string(buf[:n]) == "READY=1" {
			return filepath.Join(dir, "data", "daemon.sock")
		}
	}
}

// rawBridge is a bridge served over pipes, driven with raw ACP frames; lines are
// the frames it writes, read as they come.
type rawBridge struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan []byte // closed when the bridge's output ends
}

func startBridge(t *testing.T, b *Bridge) *rawBridge {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan struct{})
	go func() {
		b.Serve(inR, outW)
		outW.Close()
		close(served)
	}()
	r := &rawBridge{t: t, in: inW, lines: make(chan []byte, 64)}
	go func() {
		defer close(r.lines)
		out := bufio.NewReader(outR)
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				return
			}
			r.lines <- line
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		for range r.lines { // until the bridge is done writing
		}
		<-served
	})
	return r
}

func (r *rawBridge) send(format string, args ...any) {
	if _, err := fmt.Fprintf(r.in, format+"\n", args...); err != nil {
		r.t.Fatal(err)
	}
}

// next returns the bridge's next frame.
func (r *rawBridge) next() []byte {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatal("the bridge's output ended")
		}
		return line
	case <-time.After(30 * time.Second):
		r.t.Fatal("no frame from the bridge within 30 s")
	}
	return nil
}

// waitFor reads frames until one that contains s.
func (r *rawBridge) waitFor(s string) {
	r.t.Helper()
	for !strings.Contains(string(r.next()), s) {
	}
}

// answer reads frames until the answer to id, and returns it.
func (r *rawBridge) answer(id int) map[string]any {
	r.t.Helper()
	for {
		line := r.next()
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			r.t.Fatalf("a non-JSON line %q", line)
		}
		if _, isReq := m["method"]; !isReq && m["id"] == float64(id) {
			return m
		}
	}
}

func stopReason(m map[string]any) any {
	res, _ := m["result"].(map[string]any)
	return res["stopReason"]
}

// A cancel that lost the race to its turn's end reaches the daemon before the
// editor's next prompt does: the daemon's session/cancel stops whatever turn runs
// on the session, and a late one stopped the next prompt's turn (a flake of
// TestACPRawFramesBadJSONUnknownMethodsAndCancelRequest on a loaded machine). Here
// the cancel is held until the next prompt either reached the daemon (the bug) or
// waits for it.
func TestACancelThatLostTheRaceDoesNotStopTheNextPrompt(t *testing.T) {
	sock := runDaemon(t)
	release := make(chan struct{})
	b := New(Options{Agent: "full", Endpoint: sock})
	b.beforeCancel = func() { <-release }
	waiting := make(chan struct{}, 1)
	b.awaitingCancels = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	r := startBridge(t, b)
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})

	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	if m := r.answer(1); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, t.TempDir())
	m := r.answer(2)
	sid, _ := m["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", m)
	}
	// A prompt whose turn has begun (its tool runs) is cancelled; the cancel for the
	// daemon is held, so the turn ends by itself first: it won the race.
	r.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/tool shell {\"command\":\"sleep 0.2\"}"}]}}`, sid)
	r.waitFor(`"sessionUpdate":"tool_call"`)
	r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
	if m := r.answer(3); stopReason(m) != "cancelled" {
		t.Fatalf("the cancelled prompt: %v", m)
	}
	// The next prompt runs a tool for a second. The held cancel goes out once that
	// prompt's turn began on the daemon, or once the prompt waits for the cancel.
	r.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/tool shell {\"command\":\"sleep 1\"}"}]}}`, sid)
	for begun := false; !begun; {
		select {
		case <-waiting:
			begun = true
		case line, ok := <-r.lines:
			if !ok {
				t.Fatal("the bridge's output ended")
			}
			begun = strings.Contains(string(line), `"sessionUpdate":"tool_call"`) // on the daemon
		case <-time.After(30 * time.Second):
			t.Fatal("the second prompt neither began nor waited for the cancel")
		}
	}
	close(release)
	released = true
	if m := r.answer(4); stopReason(m) != "end_turn" {
		t.Fatalf("the prompt after the cancelled one: %v, want end_turn", m)
	}
}
