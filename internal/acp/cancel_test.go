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
	ctx, stop := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() {
		exited <- daemon.Run(ctx, daemon.Options{
			ConfigDir: dir, Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler),
		})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-exited; err != nil {
			t.Errorf("the daemon: %v", err)
		}
	})
	sock := filepath.Join(dir, "data", "daemon.sock")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		select {
		case err := <-exited:
			t.Fatalf("the daemon exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not serve")
		}
	}
}

// rawBridge is a bridge served over pipes, driven with raw ACP frames.
type rawBridge struct {
	t   *testing.T
	b   *Bridge
	in  io.WriteCloser
	out *bufio.Reader
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
	r := &rawBridge{t: t, b: b, in: inW, out: bufio.NewReader(outR)}
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-served
	})
	return r
}

func (r *rawBridge) send(format string, args ...any) {
	if _, err := fmt.Fprintf(r.in, format+"\n", args...); err != nil {
		r.t.Fatal(err)
	}
}

// waitFor reads frames until one that contains s.
func (r *rawBridge) waitFor(s string) {
	r.t.Helper()
	for {
		line, err := r.out.ReadBytes('\n')
		if err != nil {
			r.t.Fatalf("reading: %v", err)
		}
		if strings.Contains(string(line), s) {
			return
		}
	}
}

// answer reads frames until the answer to id, and returns it.
func (r *rawBridge) answer(id int) map[string]any {
	r.t.Helper()
	for {
		line, err := r.out.ReadBytes('\n')
		if err != nil {
			r.t.Fatalf("reading: %v", err)
		}
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		req := b.requests["4"]
		begun := req != nil && req.begun
		waiting := b.sessions[sid] != nil && b.sessions[sid].waiting > 0
		b.mu.Unlock()
		if begun || waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second prompt neither began nor waited for the cancel")
		}
	}
	close(release)
	released = true
	if m := r.answer(4); stopReason(m) != "end_turn" {
		t.Fatalf("the prompt after the cancelled one: %v, want end_turn", m)
	}
}
