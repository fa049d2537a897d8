//go:build unix

package mcp

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

func TestEverythingStdioCallsImagesProgressAndStop(t *testing.T) {
	m, lb := newManager(t, everything(t))
	if st := statusOf(m, "everything"); st.State != StateStopped || st.Transport != "stdio" {
		t.Fatalf("before any use: %+v, want stopped (servers start lazily)", st)
	}
	tools := m.Tools(context.Background(), []string{"everything"})
	st := statusOf(m, "everything")
	if st.State != StateRunning || st.PID == 0 || st.Tools != len(tools) || len(tools) < 5 {
		t.Fatalf("status %+v with %d tools", st, len(tools))
	}
	for name, tl := range tools {
		if !ValidToolName(name) || !strings.HasPrefix(name, "everything__") {
			t.Errorf("tool name %q", name)
		}
		if tl.Spec().Name != name {
			t.Errorf("spec name %q under %q", tl.Spec().Name, name)
		}
	}
	if tools["everything__echo"].Mutates() || !tools["everything__toggle-simulated-logging"].Mutates() {
		t.Error("readOnlyHint: echo is read-only, toggle-simulated-logging is not")
	}
	r := call(t, tools, "everything__echo", `{"message":"hi there"}`)
	if r.IsError || r.Output != "Echo: hi there" {
		t.Fatalf("echo = %+v", r)
	}
	r = call(t, tools, "everything__get-tiny-image", `{}`)
	contains(t, "get-tiny-image", r.Output, "[image: image/png, ")
	contains(t, "get-tiny-image", r.Output, " bytes]\nThe image above is the MCP logo.")

	var mu sync.Mutex
	var got []tool.Progress
	env := tool.Env{CallID: "call_1", Progress: func(id string, p tool.Progress) {
		if id != "call_1" {
			t.Errorf("progress for %q", id)
		}
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}}
	r = tools["everything__trigger-long-running-operation"].Run(context.Background(), env, jsontext.Value(`{"duration":1,"steps":2}`))
	contains(t, "long running operation", r.Output, "Long running operation completed")
	mu.Lock()
	// The SDK handles notifications apart from responses: the last may come after
	// the result, and is then dropped.
	if len(got) < 1 || len(got) > 2 || got[0].Progress != 1 || got[0].Total == nil || *got[0].Total != 2 {
		t.Errorf("progress = %+v", got)
	}
	mu.Unlock()

	pid := st.PID
	m.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server pid %d still there after Close: %v", pid, err)
	}
	contains(t, "log", lb.String(), "server=everything")
}

func TestAServerKilledMidCallFailsThatCallAndTheNextRestartsIt(t *testing.T) {
	m, _ := newManager(t, everything(t))
	tools := m.Tools(context.Background(), []string{"everything"})
	pid := statusOf(m, "everything").PID
	progressed := make(chan struct{}, 16)
	env := tool.Env{Progress: func(string, tool.Progress) { progressed <- struct{}{} }}
	done := make(chan tool.Result, 1)
	go func() {
		done <- tools["everything__trigger-long-running-operation"].Run(context.Background(), env, jsontext.Value(`{"duration":60,"steps":60}`))
	}()
	<-progressed // the call is under way
	syscall.Kill(pid, syscall.SIGKILL)
	r := <-done
	if !r.IsError {
		t.Fatalf("the call of a killed server: %+v", r)
	}
	contains(t, "result", r.Output, "MCP server everything: ")
	contains(t, "result", r.Output, "killed")
	if st := statusOf(m, "everything"); st.State != StateFailed || !strings.Contains(st.Error, "killed") {
		t.Errorf("status after the kill: %+v", st)
	}
	r = call(t, m.Current([]string{"everything"}), "everything__echo", `{"message":"again"}`)
	if r.IsError || r.Output != "Echo: again" {
		t.Fatalf("the next call: %+v", r)
	}
	if st := statusOf(m, "everything"); st.State != StateRunning || st.PID == pid {
		t.Errorf("status after the restart: %+v (old pid %d)", st, pid)
	}
	// A second death within the restart interval of that restart is not restarted
	// at once (the interval is made long, so that a slow restart cannot outlast it).
	srv := m.pick([]string{"everything"})[0]
	srv.mu.Lock()
	srv.restartInterval = time.Hour
	srv.mu.Unlock()
	syscall.Kill(statusOf(m, "everything").PID, syscall.SIGKILL)
	wait.For(t, "the death to be seen", time.Minute, func() bool { return statusOf(m, "everything").State == StateFailed })
	r = call(t, m.Current([]string{"everything"}), "everything__echo", `{"message":"too soon"}`)
	if !r.IsError {
		t.Fatalf("a restart within 5 s: %+v", r)
	}
	contains(t, "result", r.Output, "restarting again in")
}

func TestAServerThatNeverAnswersInitializeTimesOut(t *testing.T) {
	spec := script(t, "hang", "misbehaving.mjs", "hang")
	spec.StartupTimeout = time.Second
	m, _ := newManager(t, spec)
	if tools := m.Tools(context.Background(), []string{"hang"}); len(tools) != 0 {
		t.Fatalf("tools of a server that never started: %v", keys(tools))
	}
	st := statusOf(m, "hang")
	if st.State != StateFailed || st.Error != "did not finish initialize within 1 s" {
		t.Fatalf("status %+v", st)
	}
	fb := m.Fallback([]string{"hang"}, "hang__anything")
	if fb == nil || m.Fallback([]string{"hang"}, "other__x") != nil || m.Fallback([]string{"hang"}, "shell") != nil {
		t.Fatal("Fallback: want a tool for hang__anything only")
	}
	r := fb.Run(context.Background(), tool.Env{}, nil)
	if !r.IsError || r.Output != "MCP server hang: did not finish initialize within 1 s" {
		t.Fatalf("a call: %+v", r)
	}
}

func TestMisbehavingServer(t *testing.T) {
	spec := script(t, "bad", "misbehaving.mjs")
	spec.CallTimeout = 600 * time.Second // 20 MiB decode slowly under -race on a busy machine
	m, lb := newManager(t, spec)
	tools := m.Tools(context.Background(), []string{"bad"})
	for _, name := range []string{"bad__big", "bad__exit3", "bad__slow"} {
		if tools[name] == nil {
			t.Errorf("no %s among %v", name, keys(tools))
		}
	}
	if tools["bad__stringschema"] != nil || tools["bad__arrayschema"] != nil {
		t.Errorf("tools with a schema that is not an object are listed: %v", keys(tools))
	}
	log := lb.String()
	contains(t, "log", log, "mcp tool left out")
	contains(t, "log", log, "not JSON-RPC")
	contains(t, "log", log, "misbehaving server up") // its stderr

	r := call(t, tools, "bad__big", `{}`)
	if r.IsError || !r.Truncated || len(r.Output) > MaxOutput+200 {
		t.Fatalf("big: error %v, truncated %v, %d bytes", r.IsError, r.Truncated, len(r.Output))
	}
	contains(t, "big", r.Output[MaxOutput:], "[output truncated: ")

	// Cancel: notifications/cancelled reaches the server.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Result, 1)
	go func() { done <- tools["bad__slow"].Run(ctx, tool.Env{Progress: func(string, tool.Progress) {}}, nil) }()
	wait.For(t, "the slow call to be sent", time.Minute, func() bool {
		s := m.pick([]string{"bad"})[0]
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.progress) == 1
	})
	cancel()
	if r := <-done; !r.IsError || r.Output != "cancelled" {
		t.Fatalf("a cancelled call: %+v", r)
	}
	wait.For(t, "the server to log notifications/cancelled", time.Minute, func() bool { return strings.Contains(lb.String(), "cancelled request ") })

	r = call(t, tools, "bad__exit3", `{}`)
	if !r.IsError || r.Output != "MCP server bad: exited with status 3" {
		t.Fatalf("exit3 = %+v", r)
	}
	r = call(t, m.Current([]string{"bad"}), "bad__big", `{}`)
	if r.IsError {
		t.Fatalf("after the exit, the next call restarts the server: %+v", r)
	}
}

func TestToolsListChanged(t *testing.T) {
	m, _ := newManager(t, script(t, "changing", "changing.mjs"))
	tools := m.Tools(context.Background(), []string{"changing"})
	if tools["changing__grown"] != nil {
		t.Fatal("grown listed before grow")
	}
	if r := call(t, tools, "changing__grow", `{}`); r.IsError || r.Output != "grew" {
		t.Fatalf("grow = %+v", r)
	}
	wait.For(t, "the new tool after list_changed", time.Minute, func() bool { return m.Current([]string{"changing"})["changing__grown"] != nil })
	if r := call(t, m.Current([]string{"changing"}), "changing__grown", `{}`); r.Output != "grown here" {
		t.Fatalf("grown = %+v", r)
	}
}

func TestFilesystemServerErrorsAndReadOnly(t *testing.T) {
	dir := serversDir(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "note.txt"), []byte("hello file"), 0o600)
	m, _ := newManager(t, Spec{
		Name: "fs", Transport: TransportStdio, Command: "node",
		Args: []string{filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), root},
		Dir:  root, StartupTimeout: 60 * time.Second,
	})
	tools := m.Tools(context.Background(), []string{"fs"})
	if tools["fs__read_text_file"] == nil || tools["fs__read_text_file"].Mutates() || !tools["fs__write_file"].Mutates() {
		t.Fatalf("tools %v", keys(tools))
	}
	r := call(t, tools, "fs__read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "note.txt")))
	if r.IsError || r.Output != "hello file" {
		t.Fatalf("read = %+v", r)
	}
	r = call(t, tools, "fs__read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "missing.txt")))
	if !r.IsError {
		t.Fatalf("reading a missing file: %+v", r)
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	dir := serversDir(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	wait.For(t, "the HTTP server to listen", time.Minute, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	m, _ := newManager(t, Spec{
		Name: "web", Transport: TransportHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Headers: map[string]string{"X-Test": "1"}, StartupTimeout: 60 * time.Second,
	})
	tools := m.Tools(context.Background(), []string{"web"})
	r := call(t, tools, "web__echo", `{"message":"over http"}`)
	if r.IsError || r.Output != "Echo: over http" {
		t.Fatalf("echo = %+v", r)
	}
	if st := statusOf(m, "web"); st.Transport != "http" || st.State != StateRunning || st.PID != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestNamesAreCutAndMadeUnique(t *testing.T) {
	n := newNamer("srv")
	long := strings.Repeat("a", 80)
	a, b, c := n.name(long), n.name(long), n.name("has space.dot")
	if len(a) != 64 || len(b) != 64 || a == b || !ValidToolName(a) || !ValidToolName(b) {
		t.Errorf("long names %q %q", a, b)
	}
	if c != "srv__has_space_dot" {
		t.Errorf("sanitized %q", c)
	}
}

func TestFromConfigReadsHeaderVariablesAndDefaults(t *testing.T) {
	off := false
	cfg := config.Default()
	cfg.MCP.Servers = map[string]config.MCPServer{
		"web": {URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "${TOKEN_VAR}", "X-Plain": "v"}},
		"cmd": {Command: "node", CallTimeoutSecs: 7},
		"off": {Command: "node", Enabled: &off},
	}
	specs := FromConfig(cfg, "/data", func(k string) string { return map[string]string{"TOKEN_VAR": "Bearer s"}[k] })
	by := map[string]Spec{}
	for _, s := range specs {
		by[s.Name] = s
	}
	if len(specs) != 2 || by["off"].Name != "" {
		t.Fatalf("specs %+v", specs)
	}
	if w := by["web"]; w.Transport != TransportHTTP || w.Headers["Authorization"] != "Bearer s" || w.Headers["X-Plain"] != "v" {
		t.Errorf("web %+v", w)
	}
	if c := by["cmd"]; c.Transport != TransportStdio || c.Dir != "/data" || c.CallTimeout != 7*time.Second || c.StartupTimeout != 10*time.Second {
		t.Errorf("cmd %+v", c)
	}
}

// A server asking the daemon for sampling, elicitation or roots gets what the SDK
// answers a client that declared none of them.
func TestWhatAServerGetsWhenItAsksTheDaemon(t *testing.T) {
	m, _ := newManager(t, script(t, "bad", "misbehaving.mjs"))
	tools := m.Tools(context.Background(), []string{"bad"})
	for method, want := range map[string]string{
		"sampling/createMessage": `"code":-31001`,
		"elicitation/create":     `"code":-32602`,
		"roots/list":             `{"roots":[]}`,
	} {
		r := call(t, tools, "bad__ask", fmt.Sprintf(`{"method":%q}`, method))
		contains(t, method, r.Output, want)
	}
}
