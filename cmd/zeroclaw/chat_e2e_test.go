package main

import (
	"encoding/json/v2"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chatCmd returns `zeroclaw chat args...` with HOME=h and stdin from the string.
func chatCmd(h, stdin string, args ...string) *exec.Cmd {
	cmd := command(h, append([]string{"chat"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

func writeConfig(t *testing.T, h, toml string) {
	t.Helper()
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	if err := os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChatWithoutTerminalAutoStartsAndExitsZeroOnEndTurn(t *testing.T) {
	h := home(t)
	out, errOut, err := run(t, chatCmd(h, "hello there\n"))
	if exitCode(err) != 0 || out != "echo: hello there\n" {
		t.Fatalf("exit %v, stdout %q, stderr %q", err, out, errOut)
	}
	// The ephemeral daemon it started leaves once chat has left.
	sock := filepath.Join(h, ".zeroclaw", "data", "daemon.sock")
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(sock); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the auto-started daemon still serves after chat left")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(h, ".zeroclaw", "data", "ephemeral-daemon.log")); err != nil {
		t.Fatal(err)
	}
}

func TestChatJSONPrintsEveryUpdateThenTheResult(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	out, errOut, err := run(t, chatCmd(h, "/think hmm\nhi", "--json"))
	if exitCode(err) != 0 {
		t.Fatalf("exit %v: %s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var types []string
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v in %q", err, l)
		}
		if tp, ok := m["type"].(string); ok {
			types = append(types, tp)
		}
	}
	var res map[string]any
	json.Unmarshal([]byte(lines[len(lines)-1]), &res)
	if res["stopReason"] != "end_turn" || res["text"] != "echo: hi" || len(types) < 3 || types[0] != "user_message" || types[1] != "agent_thought_chunk" {
		t.Fatalf("output:\n%s", out)
	}
}

func TestChatExitStatusSaysHowTheTurnEnded(t *testing.T) {
	h := home(t)
	writeConfig(t, h, `
[agents.default]
max_steps = 1
autonomy = "full"

[agents.slow]
provider = "echo"
autonomy = "full"

[providers.down]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
api_key = "k"

[agents.broken]
provider = "down"
`)
	startDaemon(t, h, nil)

	_, errOut, err := run(t, chatCmd(h, `/tool shell {"command":"echo x"}`))
	if exitCode(err) != 4 || !strings.Contains(errOut, "step limit") {
		t.Errorf("max_steps: exit %v, stderr %q", err, errOut)
	}
	_, errOut, err = run(t, chatCmd(h, "hello", "--agent", "broken"))
	if exitCode(err) != 2 || !strings.Contains(errOut, "the turn failed") {
		t.Errorf("error: exit %v, stderr %q", err, errOut)
	}

	cmd := chatCmd(h, `/tool shell {"command":"`+shellThatWaits+`"}`, "--agent", "slow", "--json")
	var out syncBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if text, ok := out.await(func(s string) bool { return strings.Contains(s, `"tool_call"`) }, nil, 20*time.Second); !ok {
		t.Fatalf("no tool_call: %q", text)
	}
	waitForShell(t, filepath.Join(h, ".zeroclaw", "data", "workspaces", "slow")) // the interrupt meets a running tool
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if exitCode(err) != 3 || !strings.Contains(out.String(), `"stopReason":"cancelled"`) {
			t.Errorf("cancelled: exit %v, stdout %q", err, out.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("chat did not end after an interrupt")
	}
}

func TestStatusAndRPCWithoutDaemonNameTheEndpoint(t *testing.T) {
	h := home(t)
	sock := filepath.Join(h, ".zeroclaw", "data", "daemon.sock")
	for _, args := range [][]string{{"status"}, {"rpc", "status"}} {
		out, errOut, err := run(t, command(h, args...))
		if exitCode(err) != 1 || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, sock) || !strings.Contains(errOut, "zeroclaw daemon") {
			t.Errorf("%v: exit %v, stdout %q, stderr %q", args, err, out, errOut)
		}
	}
}

func TestStatusAndRPCOutput(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	out, _, err := run(t, command(h, "status"))
	if err != nil || !strings.Contains(out, "0.8.6") || !strings.Contains(out, d.socket) || !strings.Contains(out, "uptime:") || !strings.Contains(out, "sessions:") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, _, err = run(t, command(h, "status", "--json"))
	var st map[string]any
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st["endpoint"] != d.socket {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	out, _, err = run(t, command(h, "rpc", "session/new", `{"agentAlias":"default"}`))
	var sess map[string]any
	if err != nil || json.Unmarshal([]byte(out), &sess) != nil || sess["agentAlias"] != "default" {
		t.Fatalf("rpc session/new: %v\n%s", err, out)
	}
	out, errOut, err := run(t, command(h, "rpc", "session/cancel", `{"sessionId":"nope"}`))
	if exitCode(err) != 1 || out != "" || !strings.Contains(errOut, `"code":-32000`) {
		t.Fatalf("rpc error: exit %v, stdout %q, stderr %q", err, out, errOut)
	}
	_, errOut, err = run(t, command(h, "rpc", "status", `not json`))
	if exitCode(err) != 1 || !strings.Contains(errOut, "JSON") {
		t.Fatalf("rpc bad params: exit %v, stderr %q", err, errOut)
	}
}

// pty runs `zeroclaw chat args...` in a pseudo-terminal (script(1), as a person
// would run it) and lets the test type into it.
type pty struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncBuffer
	done  chan error
}

func startPTY(t *testing.T, h string, args ...string) *pty {
	t.Helper()
	return startPTYWith(t, h, nil, args...)
}

// startPTYWith is startPTY with more environment variables.
func startPTYWith(t *testing.T, h string, env []string, args ...string) *pty {
	t.Helper()
	line := "exec " + binary + " chat " + strings.Join(args, " ")
	c := exec.Command("script", "-qfec", line, "/dev/null")
	c.Env = append(append(command(h).Env, "TERM=dumb", "SHELL=/bin/bash"), env...)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pty{t: t, cmd: c, stdin: stdin, out: &syncBuffer{}, done: make(chan error, 1)}
	c.Stdout, c.Stderr = p.out, p.out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- c.Wait() }()
	t.Cleanup(func() {
		c.Process.Kill()
		if t.Failed() {
			t.Logf("terminal:\n%s", p.out.String())
		}
	})
	return p
}

func (p *pty) typeLine(s string) {
	io.WriteString(p.stdin, s+"\n")
}

// waitFor waits until the terminal has shown s n times in all.
func (p *pty) waitFor(s string, n int) {
	p.t.Helper()
	if _, ok := p.out.await(func(out string) bool { return strings.Count(out, s) >= n }, nil, 20*time.Second); !ok {
		p.t.Fatalf("the terminal never showed %q (%d times)", s, n)
	}
}

func (p *pty) exit() error {
	p.t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(20 * time.Second):
		p.t.Fatal("chat did not leave")
		return nil
	}
}

func TestChatInATerminalStreamsAsksApprovalAndCancelsOnCtrlC(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	p := startPTY(t, h)
	p.waitFor("connected to", 1)
	p.typeLine("/think musing")
	p.waitFor("\x1b[2mmusing\x1b[0m", 1)
	p.typeLine("hello pty")
	p.waitFor("echo: hello pty", 1)
	p.typeLine(`/tool shell {"command":"` + shellThatWaits + `"}`)
	p.waitFor("[y] allow once, [a] always, [n] reject", 1)
	p.typeLine("y")
	p.waitFor("⚙ shell", 1)
	// The tool runs once the approval was sent, which is after the line editor gave
	// the terminal back its ordinary mode: what is typed now is a line (and Ctrl-C an
	// interrupt), not the raw input of the approval question.
	waitForShell(t, filepath.Join(h, ".zeroclaw", "data", "workspaces", "default"))
	io.WriteString(p.stdin, "\x03")
	p.waitFor("[cancelled]", 1)
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
}

func TestChatResumeReplaysExactlyTheMissedUpdates(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	other := dial(t, d.socket)
	other.initialize()
	sid := other.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","keep_siblings":true},"id":2}`)["result"].(map[string]any)["sessionId"].(string)
	prompt := func(text string, id int) {
		other.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"` + text + `"},"id":` + string(rune('0'+id)) + `}`)
		for {
			if m := other.recv(); m["id"] == float64(id) {
				return
			}
		}
	}
	prompt("first words", 3) // seq 1..5 (user_message first, usage last), before chat ever saw the session

	p := startPTY(t, h, "--session", "mine")
	p.waitFor("connected to", 1)
	p.typeLine("/resume " + sid)
	p.waitFor("replayed 5 updates after seq 0", 1)
	p.waitFor("echo: first words", 1)
	prompt("second words", 4) // live: chat is attached now
	p.waitFor("echo: second words", 1)
	// Nothing missed since: nothing replayed but what was still on its way to chat
	// (the turn's last update, usage, which chat does not print, may not have reached
	// it yet when the other client's answer did).
	p.typeLine("/resume " + sid)
	p.waitFor("(last seq 10)", 1)
	p.typeLine("/quit")
	p.exit()
	out := p.out.String()
	m := regexp.MustCompile(`replayed (\d+) updates after seq (\d+) \(last seq 10\)`).FindStringSubmatch(out)
	if m == nil || m[1] != "0" && !(m[1] == "1" && m[2] == "9") {
		t.Fatalf("the second resume replayed more than chat had missed:\n%s", out)
	}
	if strings.Count(out, "echo: first words") != 1 || strings.Count(out, "echo: second words") != 1 {
		t.Fatalf("updates shown more than once:\n%s", out)
	}
}

func TestChatSessionControls(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	p := startPTY(t, h)
	p.waitFor("connected to", 1)
	p.typeLine("/mode readonly")
	p.waitFor(`mode readonly, model echo, title ""`, 1)
	p.waitFor("(session: mode readonly, model echo", 1) // the session_info update
	p.typeLine("/mode full")                            // the operator is an admin: allowed
	p.waitFor("mode full, model echo", 1)
	p.typeLine("/model")
	p.waitFor("models (from default):", 1)
	p.waitFor("* echo", 1)
	p.typeLine("/model gpt-nope")
	p.waitFor(`model "gpt-nope" is not one of agent default's models`, 1)
	p.typeLine("/title Pty work")
	p.waitFor(`title "Pty work"`, 1)
	p.typeLine(`/tool update_plan {"entries":[{"content":"read","status":"completed"},{"content":"write","status":"in_progress","priority":"high"},{"content":"ship","status":"pending"}]}`)
	p.waitFor("plan (1/3 done):\r\n  [x] read\r\n  [>] write (high)\r\n  [ ] ship\r\n", 1)
	p.typeLine(strings.Repeat("many words here ", 30))
	p.waitFor("echo: many words", 1)
	p.typeLine("/compact keep it short")
	p.waitFor("compacted the context from ", 1)
	p.waitFor("(history compacted: ", 1)
	p.typeLine("/fork Pty fork")
	p.waitFor("now in the fork", 1)
	p.typeLine("/mode")
	p.waitFor(`mode full, model echo, title "Pty fork"`, 1)
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
}

func TestChatInATerminalCancelsWithTypedCancelDuringATurn(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	p := startPTY(t, h)
	p.waitFor("connected to", 1)
	p.typeLine(`/tool shell {"command":"` + shellThatWaits + `"}`)
	p.waitFor("[y] allow once, [a] always, [n] reject", 1)
	p.typeLine("y")
	p.waitFor("⚙ shell", 1)
	// The tool runs once the approval was sent, which is after the line editor gave
	// the terminal back its ordinary mode: what is typed now is a line (and Ctrl-C an
	// interrupt), not the raw input of the approval question.
	waitForShell(t, filepath.Join(h, ".zeroclaw", "data", "workspaces", "default"))
	p.typeLine("typed ahead\t") // a Tab at its end: the next prompt, not a steer
	p.waitFor("queued after this turn", 1)
	p.typeLine("/cancel")
	p.waitFor("[cancelled]", 1)
	// What was typed during the turn runs next, then the prompt reads again.
	p.waitFor("echo: typed ahead", 1)
	p.typeLine("after the cancel")
	p.waitFor("echo: after the cancel", 1)
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
}
