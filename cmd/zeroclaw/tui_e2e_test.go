package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The terminal UI's end-to-end test runs `zeroclaw` (no subcommand) in a tmux pane
// against a real daemon with the echo provider, types like a user and reads the
// screen with capture-pane.

// tmuxPane is one tmux server (a socket of its own) with one pane running zeroclaw.
type tmuxPane struct {
	t      *testing.T
	socket string
	exit   string // the file the pane's command writes its exit status to
}

func startTmux(t *testing.T, h string, width, height int, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	p := &tmuxPane{t: t, socket: filepath.Join(h, "tmux.sock"), exit: filepath.Join(h, "tui.exit")}
	// The pane's command: the binary with HOME=h, then its exit status to a file.
	script := filepath.Join(h, "tui.sh")
	cmdline := "exec 2>" + shellQuote(filepath.Join(h, "tui.stderr")) + "\n" + shellQuote(binary)
	for _, a := range args {
		cmdline += " " + shellQuote(a)
	}
	cmdline += "\necho $? > " + shellQuote(p.exit) + "\ntmux wait-for -S exited\nsleep 600\n"
	if err := os.WriteFile(script, []byte(cmdline), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + h, "TERM=xterm-256color", "LANG=C.UTF-8"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command("tmux", "-u", "-S", p.socket, "-f", "/dev/null", "new-session", "-d", "-s", "tui",
		"-x", itoa(width), "-y", itoa(height), "sh "+shellQuote(script))
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", p.capture())
			if b, err := os.ReadFile(filepath.Join(h, "tui.stderr")); err == nil && len(b) > 0 {
				t.Logf("stderr:\n%s", b)
			}
		}
		exec.Command("tmux", "-S", p.socket, "kill-server").Run()
	})
	return p
}

// waitExit waits at most within for the pane's command to end, and returns its exit
// status: the pane's script signals the tmux channel "exited" once it has written it.
func (p *tmuxPane) waitExit(within time.Duration) (status string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := exec.CommandContext(ctx, "tmux", "-S", p.socket, "wait-for", "exited").Run(); err != nil {
		return "", false
	}
	b, err := os.ReadFile(p.exit)
	return strings.TrimSpace(string(b)), err == nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture returns the pane's screen as text.
func (p *tmuxPane) capture() string {
	out, _ := exec.Command("tmux", "-S", p.socket, "capture-pane", "-p", "-t", "tui").CombinedOutput()
	return string(out)
}

// waitScreen polls the screen until cond holds, for at most a minute.
func (p *tmuxPane) waitScreen(what string, cond func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.capture()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s; the screen:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond) // polling the screen, with a deadline
	}
}

func (p *tmuxPane) waitFor(s string) string {
	p.t.Helper()
	return p.waitScreen(strings.TrimSpace(s), func(screen string) bool { return strings.Contains(screen, s) })
}

// statusLine is the screen's last non-empty line.
func statusLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return lines[len(lines)-1]
}

func (p *tmuxPane) waitStatus(s string) string {
	p.t.Helper()
	return p.waitScreen("status line "+s, func(screen string) bool { return strings.Contains(statusLine(screen), s) })
}

func (p *tmuxPane) typeText(s string) { p.t.Helper(); p.tmux("send-keys", "-t", "tui", "-l", s) }
func (p *tmuxPane) keys(k ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "tui"}, k...)...)
}

func TestTUIUnderTmuxStreamsApprovesCancelsResumesAndSurvivesARestart(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	p := startTmux(t, h, 100, 30) // zeroclaw with no subcommand, in a terminal
	p.waitStatus("● connected")

	// A prompt and its streamed reply.
	p.typeText("hello there")
	p.keys("Enter")
	p.waitFor("echo: hello there")
	p.waitStatus("hello there") // the session's title

	// A tool call through the echo provider: the approval overlay, y, the card.
	p.typeText(`/tool shell {"command":"echo hi"}`)
	p.keys("Enter")
	p.waitFor("Allow shell?")
	p.keys("y")
	screen := p.waitFor("shell -> hi")
	if !strings.Contains(screen, "✓ shell echo hi") || !strings.Contains(screen, "│ hi") {
		t.Fatalf("the tool card lacks its status or output:\n%s", screen)
	}

	// Ctrl-C during a long turn cancels it.
	p.typeText(`/tool shell {"command":"sleep 30"}`)
	p.keys("Enter")
	p.waitFor("Allow shell?")
	p.keys("y")
	p.waitScreen("the card running", func(s string) bool {
		return strings.Contains(s, "shell sleep 30") && !strings.Contains(s, "Allow shell?")
	})
	p.keys("C-c")
	screen = p.waitFor("turn cancelled")
	if !strings.Contains(screen, "⊘ shell sleep 30") {
		t.Fatalf("the cancelled card:\n%s", screen)
	}

	// ask_user's question is a form with the choices as a list.
	p.typeText(`/tool ask_user {"question":"Which colour?","choices":["red","green","blue"]}`)
	p.keys("Enter")
	p.waitFor("Which colour?")
	p.waitFor("> red")
	p.keys("Down")
	p.waitFor("> green")
	p.keys("Enter")
	p.waitFor("ask_user -> green")

	// /attach uploads a file; it goes with the next prompt.
	file := filepath.Join(h, "notes.txt")
	if err := os.WriteFile(file, []byte("some notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.typeText("/attach " + file)
	p.keys("Enter")
	p.waitFor("attached ")
	p.typeText("read it")
	p.keys("Enter")
	p.waitFor("[Document: notes.txt]")

	// /sessions lists both sessions and resumes the first.
	p.typeText("/new")
	p.keys("Enter")
	p.waitScreen("a new session", func(s string) bool { return !strings.Contains(s, "echo: hello there") })
	p.typeText("second session")
	p.keys("Enter")
	p.waitFor("echo: second session")
	p.typeText("/ses")
	p.keys("Tab")
	p.waitFor("/sessions")
	p.keys("Enter")
	p.waitFor("Sessions —")
	p.waitFor("second session")
	// Move the picker's cursor (▸) to the first session's row.
	screen = p.capture()
	row, cur := rowOf(screen, "hello there"), rowOf(screen, "▸")
	if row < 0 || cur < 0 {
		t.Fatalf("the picker lacks the first session or its cursor:\n%s", screen)
	}
	key := "Down"
	if row < cur {
		key = "Up"
	}
	for range max(row-cur, cur-row) {
		p.keys(key)
	}
	p.waitScreen("the first session selected", func(s string) bool { return strings.Contains(selectedRow(s), "hello there") })
	p.keys("Enter")
	p.waitFor("echo: hello there") // replayed
	p.waitStatus("hello there")

	// The daemon dies mid-turn: the status line says so; a new daemon: it recovers.
	p.typeText(`/tool shell {"command":"sleep 30"}`)
	p.keys("Enter")
	p.waitFor("Allow shell?")
	p.keys("y")
	p.waitScreen("the card running", func(s string) bool {
		return strings.Count(s, "shell sleep 30") == 2 && !strings.Contains(s, "Allow shell?")
	})
	kill9(t, d)
	p.waitStatus("reconnecting")
	startDaemon(t, h, nil)
	p.waitStatus("daemon restarted")
	p.typeText("after the restart")
	p.keys("Enter")
	p.waitFor("echo: after the restart")
	p.waitStatus("● connected")

	// 80×24: the layout holds.
	p.tmux("resize-window", "-t", "tui", "-x", "80", "-y", "24")
	screen = p.waitScreen("an 80×24 screen", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 24 && strings.Contains(lines[23], "● connected") && strings.Contains(s, "echo: after the restart")
	})
	for i, l := range strings.Split(screen, "\n") {
		if w := len([]rune(l)); w > 80 {
			t.Fatalf("line %d is %d wide at 80 columns:\n%s", i, w, screen)
		}
	}
	if strings.Count(screen, strings.Repeat("─", 80)) != 1 {
		t.Fatalf("the input box's rule is not one full line at 80 columns:\n%s", screen)
	}
	if path := os.Getenv("ZEROCLAW_TUI_CAPTURE"); path != "" {
		os.WriteFile(path, []byte(screen), 0o644) // the README's screen
	}

	// Ctrl-C twice leaves, with status 0.
	p.keys("C-c")
	p.keys("C-c")
	status, ok := p.waitExit(30 * time.Second)
	if !ok {
		t.Fatalf("zeroclaw did not exit after Ctrl-C twice:\n%s", p.capture())
	}
	if status != "0" {
		t.Fatalf("exit status %s", status)
	}
}

// rowOf is the index of the screen's first line containing s, -1 when none.
func rowOf(screen, s string) int {
	for i, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// selectedRow is the picker's row under the cursor (marked ▸, inside the overlay's
// border: a plan's entry in progress is marked ▸ too).
func selectedRow(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "│ ▸") {
			return l
		}
	}
	return ""
}

func TestZeroclawWithoutATerminalPrintsHelpAndTUIRefuses(t *testing.T) {
	h := home(t)
	cmd := command(h)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage:") || !strings.Contains(string(out), "tui") {
		t.Fatalf("zeroclaw piped: %v\n%s", err, out)
	}
	cmd = command(h, "tui")
	cmd.Stdin = strings.NewReader("")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs a terminal") {
		t.Fatalf("zeroclaw tui piped: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(h, ".zeroclaw", "data", "daemon.sock")); err == nil {
		t.Fatal("a daemon was started for nothing")
	}
}
