package harness

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// roleEnv makes the test binary a child process that writes a line to stderr and
// exits with the code the role names, or, for "hold", runs until killed.
const roleEnv = "HARNESS_TEST_ROLE"

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); role {
	case "":
		os.Exit(m.Run())
	case "hold":
		fmt.Fprintln(os.Stderr, "holding")
		io.Copy(io.Discard, os.Stdin) // until killed: the test keeps stdin open
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stdout, "out")
		fmt.Fprintln(os.Stderr, "exiting with", role)
		var code int
		fmt.Sscan(role, &code)
		os.Exit(code)
	}
}

func child(role string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	return cmd
}

func TestLogAwaitIsWokenByWritesAndGivesUpAtStopOrTimeout(t *testing.T) {
	var l Log
	go func() {
		for _, s := range []string{"one ", "two ", "three"} {
			l.Write([]byte(s))
		}
	}()
	if text, ok := l.Await(func(s string) bool { return strings.Contains(s, "three") }, nil, 10*time.Second); !ok || text != "one two three" {
		t.Fatalf("Await = %q, %v", text, ok)
	}
	stop := make(chan struct{})
	close(stop)
	if text, ok := l.Await(func(s string) bool { return strings.Contains(s, "four") }, stop, 10*time.Second); ok || text != "one two three" {
		t.Fatalf("Await after stop = %q, %v", text, ok)
	}
	if _, ok := l.Await(func(s string) bool { return false }, nil, time.Millisecond); ok {
		t.Fatal("Await held past its timeout")
	}
	l.WaitFor(t, "two", nil, 10*time.Second)
}

func TestProcWaitsRunsAndTellsExitCodes(t *testing.T) {
	p := Start(t, "child", child("3"), nil)
	err := p.Wait(30 * time.Second)
	if ExitCode(err) != 3 || p.Running() || p.Err() != err || !strings.Contains(p.Stderr.String(), "exiting with 3") {
		t.Fatalf("exit %v, running %v, stderr %q", err, p.Running(), p.Stderr.String())
	}

	held := child("hold")
	stdin, err := held.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	var log Log
	h := Start(t, "held", held, &log)
	h.Stderr.WaitFor(t, "holding", h.Exited, 30*time.Second)
	if !h.Running() || h.Err() != nil || h.Stderr != &log {
		t.Fatalf("running %v, err %v", h.Running(), h.Err())
	}

	out, errOut, err := Run(t, child("0"), 30*time.Second)
	if err != nil || ExitCode(err) != 0 || out != "out\n" || errOut != "exiting with 0\n" {
		t.Fatalf("Run = %q, %q, %v", out, errOut, err)
	}
	if ExitCode(exec.Command(filepath.Join(t.TempDir(), "none")).Run()) != -1 {
		t.Fatal("a command that did not start has an exit code")
	}
}

// server answers each request line on c with the given frames, in order.
func server(c net.Conn, answers ...string) {
	r := bufio.NewReader(c)
	for _, a := range answers {
		if _, err := r.ReadBytes('\n'); err != nil {
			return
		}
		io.WriteString(c, a)
	}
	c.Close()
}

func TestConnFramesRequestsAndResponses(t *testing.T) {
	ours, theirs := net.Pipe()
	go server(theirs,
		`{"jsonrpc":"2.0","result":{"serverVersion":"x"},"id":1}`+"\n",
		`{"jsonrpc":"2.0","method":"session/update","params":{}}`+"\n"+`{"jsonrpc":"2.0","result":{"n":2},"id":"init"}`+"\n",
		`{"jsonrpc":"2.0","method":"note"}`+"\n",
		`{"jsonrpc":"2.0","result":{},"id":3}`+"\n",
	)
	c := NewConn(t, ours, 10*time.Second)
	if res := c.Initialize(1); res["serverVersion"] != "x" {
		t.Fatalf("Initialize(1) = %v", res)
	}
	if res := c.Initialize("init"); res["n"] != float64(2) {
		t.Fatalf("Initialize(\"init\") = %v", res)
	}
	if m := c.Call(`{"jsonrpc":"2.0","method":"status","id":2}`); m["method"] != "note" {
		t.Fatalf("Call = %v, want the next frame", m)
	}
	if m := c.CallID(`{"jsonrpc":"2.0","method":"status","id":3}`, float64(3)); m["id"] != float64(3) {
		t.Fatalf("CallID = %v", m)
	}
	if !c.Closed(10 * time.Second) {
		t.Fatal("the server's close is not seen")
	}
}

func TestConnClosedTellsATimeoutFromAClose(t *testing.T) {
	ours, theirs := net.Pipe()
	defer theirs.Close()
	c := NewConn(t, ours, 10*time.Second)
	if c.Closed(10 * time.Millisecond) {
		t.Fatal("an open connection is reported closed")
	}
}

func TestProxyForwardsCutsAndRefuses(t *testing.T) {
	dir, err := os.MkdirTemp("", "zht")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	target := filepath.Join(dir, "t.sock")
	ln, err := net.Listen("unix", target)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() // echo
		}
	}()
	p := NewProxy(t, target)
	dial := func() *bufio.Reader {
		c, err := net.Dial("unix", p.Path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "ping\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		return bufio.NewReader(c)
	}
	r := dial()
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("through the proxy: %q, %v", line, err)
	}
	p.Cut()
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("a cut connection still reads")
	}
	p.Refusing(true)
	if _, err := dial().ReadString('\n'); err == nil {
		t.Fatal("a refusing proxy forwarded")
	}
	p.Refusing(false)
	if line, err := dial().ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("after refusing: %q, %v", line, err)
	}
}
