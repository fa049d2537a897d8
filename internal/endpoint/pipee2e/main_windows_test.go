//go:build windows

package pipee2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json/v2"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/harness"
)

// binary is the Windows build of zeroclaw under test: $ZEROCLAW_TEST_BINARY (CI
// builds it on Linux, as Wine has no Go), else built here.
var binary string

// guard bounds every wait: a hang fails the test instead of stalling CI. It is
// never an assertion on speed.
const guard = 30 * time.Second

// roleEnv selects a helper role when the test binary is run as a child process.
const roleEnv = "ZEROCLAW_PIPEE2E_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
	case "block": // a shell tool that runs until its turn is cancelled
		toolRunning()
		// Asleep on a timer, not in an empty select: with no other goroutine the
		// runtime would call an empty select a deadlock and exit at once.
		for {
			time.Sleep(time.Hour)
		}
	case "console":
		os.Exit(consoleHelper())
	default:
		fmt.Fprintln(os.Stderr, "unknown role", os.Getenv(roleEnv))
		os.Exit(2)
	}
	binary = os.Getenv("ZEROCLAW_TEST_BINARY")
	cleanup := func() {}
	if binary == "" {
		dir, err := os.MkdirTemp("", "zcbin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cleanup = func() { os.RemoveAll(dir) }
		binary = filepath.Join(dir, "zeroclaw.exe")
		build := exec.Command("go", "build", "-o", binary, "github.com/zeroclaw-labs/zeroclaw-go/cmd/zeroclaw")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building zeroclaw:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// tempDir is a fresh directory removed at cleanup. Not t.TempDir: Go's RemoveAll
// deletes with POSIX semantics (FileDispositionInformationEx), which Wine 8.0 lacks,
// and fails there; os.Remove of each entry, deepest first, works on both.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zce2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var paths []string
		filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			paths = append(paths, p)
			return nil
		})
		for i := len(paths) - 1; i >= 0; i-- {
			if err := os.Remove(paths[i]); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return dir
}

// configDir is a fresh config dir; its data dir is <dir>\data.
func configDir(t *testing.T, config string) string {
	t.Helper()
	dir := tempDir(t)
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// uniquePipe is a pipe name no other test uses, for ZEROCLAW_SOCKET.
func uniquePipe() string {
	b := make([]byte, 8)
	rand.Read(b)
	return `\\.\pipe\zeroclaw-e2e-` + hex.EncodeToString(b)
}

// command is zeroclaw with args, ZEROCLAW_CONFIG_DIR=dir, the ZEROCLAW_* variables
// of this process removed and env added.
func command(dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = environ(dir, env)
	return cmd
}

func environ(dir string, env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(strings.ToUpper(kv), "ZEROCLAW_") {
			out = append(out, kv)
		}
	}
	return append(append(out, "ZEROCLAW_CONFIG_DIR="+dir), env...)
}

// run runs zeroclaw to completion with stdin, within guard.
func run(t *testing.T, dir string, env []string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := command(dir, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return harness.Run(t, cmd, guard)
}

// start starts cmd with its stderr collected; the test's cleanup kills it.
func start(t *testing.T, cmd *exec.Cmd) *harness.Proc {
	t.Helper()
	return harness.Start(t, filepath.Base(cmd.Path), cmd, nil)
}

// daemon is a running `zeroclaw daemon`.
type daemon struct {
	*harness.Proc
	dir  string // config dir
	pipe string // where it serves
}

// startDaemon starts `zeroclaw daemon args...` and waits for its "serving" log line.
// It does not connect: the first client of a test is the test's own.
func startDaemon(t *testing.T, dir string, env []string, args ...string) *daemon {
	t.Helper()
	d := launchDaemon(t, dir, env, args...)
	d.Stderr.WaitFor(t, "msg=serving endpoint="+d.pipe+" ", d.Exited, guard)
	if !d.Running() {
		t.Fatalf("the daemon exited: %v\n%s", d.Err(), d.Stderr.String())
	}
	return d
}

func launchDaemon(t *testing.T, dir string, env []string, args ...string) *daemon {
	t.Helper()
	p := start(t, command(dir, env, append([]string{"daemon"}, args...)...))
	return &daemon{Proc: p, dir: dir, pipe: pipeFor(dir, env)}
}

// pipeFor is the pipe a daemon with config dir dir and env serves.
func pipeFor(dir string, env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ZEROCLAW_SOCKET="); ok {
			return v
		}
	}
	return defaultPipe(filepath.Join(dir, "data"))
}

// dialRaw is a byte-level client of the pipe: no client package, no framing help.
func dialRaw(t *testing.T, pipe string) *harness.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	c, err := endpoint.Dial(ctx, pipe)
	if err != nil {
		t.Fatalf("dial %s: %v", pipe, err)
	}
	return harness.NewConn(t, c, guard)
}

// recvAll reads until the daemon closes the connection and returns the responses
// by id.
func recvAll(t *testing.T, c *harness.Conn) map[any]map[string]any {
	t.Helper()
	out := map[any]map[string]any{}
	c.Conn.SetReadDeadline(time.Now().Add(guard))
	for {
		line, err := c.R.ReadBytes('\n')
		if err != nil {
			return out
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("frame %q: %v", line, err)
		}
		if _, isRequest := m["method"]; !isRequest {
			out[m["id"]] = m
		}
	}
}

// errorCode is the code of a response's error, or 0.
func errorCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}
