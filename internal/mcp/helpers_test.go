package mcp

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// serversDir is test/mcp, where .ci/run installs the real servers with npm ci. The
// tests need node; without it they skip, saying so.
func serversDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the MCP tests run real servers on node (.ci/run installs it)")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "test", "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything")); err != nil {
		t.Fatalf("the MCP test servers are not installed: run `npm ci` in %s (.ci/run does)", dir)
	}
	return dir
}

func everything(t *testing.T) Spec {
	dir := serversDir(t)
	return Spec{
		Name: "everything", Transport: TransportStdio, Command: "node",
		Args: []string{filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"},
		Dir:  t.TempDir(), StartupTimeout: 60 * time.Second, CallTimeout: 60 * time.Second,
	}
}

func script(t *testing.T, name, file string, args ...string) Spec {
	dir := serversDir(t)
	return Spec{
		Name: name, Transport: TransportStdio, Command: "node",
		Args: append([]string{filepath.Join(dir, file)}, args...),
		Dir:  dir, StartupTimeout: 60 * time.Second, CallTimeout: 60 * time.Second,
	}
}

// logBuffer is a daemon log the tests read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newManager(t *testing.T, specs ...Spec) (*Manager, *logBuffer) {
	lb := &logBuffer{}
	m := NewManager(slog.New(slog.NewTextHandler(lb, nil)))
	m.Configure(specs)
	t.Cleanup(m.Close)
	return m, lb
}

func call(t *testing.T, tools map[string]tool.Tool, name, args string) tool.Result {
	t.Helper()
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %s among %v", name, keys(tools))
	}
	return tl.Run(context.Background(), tool.Env{}, jsontext.Value(args))
}

func keys(m map[string]tool.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func statusOf(m *Manager, name string) Status {
	for _, s := range m.Status() {
		if s.Name == name {
			return s
		}
	}
	return Status{}
}

func contains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s = %q, want it to contain %q", what, s, sub)
	}
}
