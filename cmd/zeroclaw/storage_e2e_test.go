//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fullfs"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

// docs/protocol.md, "Storage failures", on a really full disk: the config dir, the
// data dir and the socket on a 2 MiB tmpfs (root only; internal/rpc's storage tests
// run the same cases through the store's injection point without root).

// fullDaemon starts the daemon with its config dir on fs and agent "default" on
// the fake model with autonomy full.
func fullDaemon(t *testing.T, fs *fullfs.FS, fake *fakeopenai.Server) (*daemon, []string) {
	t.Helper()
	dir := filepath.Join(fs.Dir, "zc")
	os.MkdirAll(dir, 0o700)
	conf := fmt.Sprintf("[providers.fake]\nkind = \"openai\"\nbase_url = %q\nmodel = \"m\"\n\n"+
		"[agents.default]\nprovider = \"fake\"\nautonomy = \"full\"\n", fake.URL())
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"ZEROCLAW_CONFIG_DIR=" + dir, "ZEROCLAW_SOCKET=" + filepath.Join(dir, "data", "daemon.sock")}
	return startDaemon(t, home(t), env), env
}

func transcriptOf(c *rpcConn, sid string) string {
	c.t.Helper()
	res := c.must("session/messages", `{"sessionId":"`+sid+`"}`)
	var rows []string
	for _, m := range res["messages"].([]any) {
		r := m.(map[string]any)
		if r["interrupted"] == true {
			rows = append(rows, "marker!")
			continue
		}
		rows = append(rows, fmt.Sprint(r["role"], ":", r["text"]))
	}
	return strings.Join(rows, " | ")
}

func TestAFullDiskFailsWhatNeedsItVisiblyAndTheDaemonRecoversWithoutARestart(t *testing.T) {
	fs := fullfs.Mount(t, 2<<20)
	filler := filepath.Join(fs.Dir, ".zc-filler") // what fs.Free removes
	wal := filepath.Join(fs.Dir, "zc", "data", "sessions.db-wal")
	fake := fakeopenai.New(t,
		fakeopenai.Answer{Text: []string{"hi"}},
		// The tool fills the disk; its result is the checkpoint that cannot be stored.
		fakeopenai.Answer{Calls: []fakeopenai.Call{{ID: "c1", Name: "shell", Args: `{"command":"` + fillCommand(filler, wal) + `"}`}}},
		fakeopenai.Answer{Text: []string{"back"}})
	d, env := fullDaemon(t, fs, fake)
	c := dial(t, d.socket)
	c.initialize()
	sid := c.must("session/new", `{"agentAlias":"default","sessionId":"full-1","keep_siblings":true}`)["sessionId"].(string)
	c.must("session/new", `{"agentAlias":"default","sessionId":"spare-kill","keep_siblings":true}`)
	c.must("session/new", `{"agentAlias":"default","sessionId":"spare-delete","keep_siblings":true}`)
	if r := c.must("session/prompt", `{"sessionId":"full-1","prompt":"hello"}`); r["stopReason"] != "end_turn" {
		t.Fatalf("first turn: %v", r)
	}

	// The checkpoint of the tool's result cannot be stored.
	r := c.must("session/prompt", `{"sessionId":"full-1","prompt":"fill"}`)
	if text, _ := r["text"].(string); r["stopReason"] != "error" || !strings.HasPrefix(text, "storage failed: ") {
		t.Fatalf("turn on a full disk: %v, want stopReason error and \"storage failed: …\"", r)
	}
	if strings.Contains(r["text"].(string), fs.Dir) {
		t.Errorf("the turn's text names a path: %q", r["text"])
	}
	t.Logf("turn on a full disk: %q", r["text"])
	if !fs.Full() {
		t.Fatal("the disk is not full: the test proves nothing")
	}
	if n := fake.Count(); n != 2 {
		t.Fatalf("%d model calls, want 2: none after the failed checkpoint", n)
	}

	// A write fails only when it needs room the disk has not: a WAL that SQLite
	// starts over has room for the writes that fit in it. Writes paused, the daemon
	// empties the WAL (docs/protocol.md, "A daemon that runs for months"), which
	// gives its room back to the disk; fill that too. Then every write needs the
	// disk, whatever room the WAL had.
	waitEmptyWAL(t, wal)
	topUp(t, filler)

	// While full: a prompt fails before the model, config writes, kill and delete fail.
	_, e := c.rpc("session/prompt", `{"sessionId":"full-1","prompt":"while full"}`)
	wantError(t, e, -32603, "", "")
	if n := fake.Count(); n != 2 {
		t.Errorf("the model was called while the prompt could not be stored (%d calls)", n)
	}
	_, e = c.rpc("config/set", `{"prop":"agents.default.max_steps","value":7}`)
	wantError(t, e, -32603, "", "")
	if strings.Contains(fmt.Sprint(e), fs.Dir) {
		t.Errorf("the config error names a path: %v", e)
	}
	if v := c.must("config/get", `{"prop":"agents.default.max_steps"}`)["value"]; v == float64(7) {
		t.Error("the failed config write went live")
	}
	_, e = c.rpc("session/kill", `{"sessionId":"spare-kill"}`)
	wantError(t, e, -32603, "", "")
	_, e = c.rpc("session/delete", `{"sessionId":"spare-delete"}`)
	wantError(t, e, -32603, "", "")
	if got := transcriptOf(c, sid); got != "user:hello | assistant:hi" {
		t.Fatalf("transcript on a full disk %q: the first turn must be intact", got)
	}

	// Space returns: everything works again, in the same daemon.
	fs.Free()
	if r := c.must("session/prompt", `{"sessionId":"full-1","prompt":"again"}`); r["stopReason"] != "end_turn" || r["text"] != "back" {
		t.Fatalf("after space returned: %v", r)
	}
	want := `user:hello | assistant:hi | user:fill | tool_call:{"command":"` + fillCommand(filler, wal) + `"} | marker! | user:again | assistant:back`
	if got := transcriptOf(c, sid); got != want {
		t.Fatalf("transcript after recovery:\n%s\nwant:\n%s", got, want)
	}
	c.must("config/set", `{"prop":"agents.default.max_steps","value":7}`)
	c.must("session/kill", `{"sessionId":"spare-kill"}`)
	c.must("session/delete", `{"sessionId":"spare-delete"}`)

	// And nothing is lost across a restart.
	c.conn.Close()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(20 * time.Second); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, d.stderr.String())
	}
	d2 := startDaemon(t, d.home, env)
	c2 := dial(t, d2.socket)
	c2.initialize()
	c2.must("session/new", `{"agentAlias":"default","sessionId":"full-1"}`)
	if got := transcriptOf(c2, sid); got != want {
		t.Fatalf("transcript after a restart:\n%s\nwant:\n%s", got, want)
	}
	if v := c2.must("config/get", `{"prop":"agents.default.max_steps"}`)["value"]; v != float64(7) {
		t.Errorf("max_steps after a restart = %v, want 7", v)
	}
	if !strings.Contains(d.stderr.String(), "full") {
		t.Errorf("the daemon's log does not say the disk was full:\n%s", d.stderr.String())
	}
}

// fillCommand is the shell command of the tool that fills the disk with filler,
// then prints the 64 KiB a tool result keeps at most. It fills the disk only once
// the daemon emptied its WAL (writes paused while the tool runs), so that its
// result, the checkpoint that cannot be stored, finds no room in the WAL file
// either.
func fillCommand(filler, wal string) string {
	return `n=0; while [ -s ` + wal + ` ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; ` +
		`cat /dev/zero > ` + filler + `; yes x | head -c 65536`
}

// topUp fills what room the disk has left into filler.
func topUp(t *testing.T, filler string) {
	t.Helper()
	f, err := os.OpenFile(filler, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zeros := make([]byte, 4096) // a tmpfs page: once one does not fit, none does
	for {
		if _, err := f.Write(zeros); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
}

// waitEmptyWAL waits for the daemon to truncate its WAL, which it does once writes
// paused for a second.
func waitEmptyWAL(t *testing.T, wal string) {
	t.Helper()
	wait.For(t, "the WAL "+wal+" truncated after the writes paused", 30*time.Second, func() bool { // the daemon says nothing of it
		fi, err := os.Stat(wal)
		return os.IsNotExist(err) || err == nil && fi.Size() == 0
	})
}

// A crash in the middle of a config, pairing or WSS certificate write leaves its temporary file
// (atomicfile: the target's name plus ".tmp"); the next start removes it and keeps
// the file it was replacing.
func TestTempFilesOfInterruptedWritesAreRemovedAtStart(t *testing.T) {
	h := home(t)
	dir := filepath.Join(h, ".zeroclaw")
	os.MkdirAll(filepath.Join(dir, "data"), 0o700)
	conf := "[agents.default]\nmax_steps = 9\n"
	os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600)
	leftovers := []string{filepath.Join(dir, "config.toml.tmp"), filepath.Join(dir, "data", "pairings.json.tmp"),
		filepath.Join(dir, "data", "wss-key.pem.tmp"), filepath.Join(dir, "data", "wss-cert.pem.tmp")}
	for _, p := range leftovers {
		if err := os.WriteFile(p, []byte("half a wri"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	for _, p := range leftovers {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the start: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config.toml")); string(b) != conf {
		t.Errorf("config.toml changed to %q", b)
	}
	if v := c.must("config/get", `{"prop":"agents.default.max_steps"}`)["value"]; v != float64(9) {
		t.Errorf("max_steps = %v, want 9", v)
	}
}
