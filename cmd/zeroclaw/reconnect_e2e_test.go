package main

import (
	"encoding/json/v2"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// The reconnect tests take the daemon away under a running `zeroclaw chat` in a
// terminal, mid-turn, and start it again: chat reconnects by itself, says in one
// line what happened, shows what the turn streamed exactly once, and the next
// prompt works.

func TestChatReconnectsAfterKill9MidTurnAndShowsTheRecoveredTurnOnce(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"partial words "}, Hold: true}, fakeopenai.Answer{Text: []string{"fine again"}})
	h := crashHome(t, fake)
	d := startDaemon(t, h, nil)
	p := startPTY(t, h, "--session", "chat-crash")
	p.waitFor("connected to", 1)
	p.typeLine("first")
	p.waitFor("partial words", 1)
	kill9(t, d)
	p.waitFor("connection to the daemon lost; reconnecting", 1)

	startDaemon(t, h, nil)
	p.waitFor("daemon restarted; session recovered, last turn interrupted", 1)
	p.typeLine("second")
	p.waitFor("fine again", 1)
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
	out := p.out.String()
	if strings.Count(out, "partial words") != 1 || strings.Count(out, "daemon restarted") != 1 || strings.Contains(out, "error:") ||
		strings.Contains(out, "[cancelled]") { // the restart line said it: no second word for the recovered end
		t.Fatalf("terminal:\n%s", out)
	}
	d = startDaemon(t, h, nil)
	if got := strings.Join(resume(t, d, "chat-crash"), " "); got != "user marker! user assistant" {
		t.Fatalf("transcript: %s", got)
	}
}

func TestChatReconnectsAfterACleanRestartMidTurn(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"partial words "}, Hold: true}, fakeopenai.Answer{Text: []string{"fine again"}})
	h := crashHome(t, fake)
	d := startDaemon(t, h, nil)
	p := startPTY(t, h, "--session", "chat-term")
	p.waitFor("connected to", 1)
	p.typeLine("first")
	p.waitFor("partial words", 1)
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(20 * time.Second); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	p.waitFor("connection to the daemon lost; reconnecting", 1)

	startDaemon(t, h, nil)
	p.waitFor("daemon restarted; session recovered", 1)
	p.typeLine("second")
	p.waitFor("fine again", 1)
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
	out := p.out.String()
	if strings.Count(out, "partial words") != 1 || strings.Count(out, "daemon restarted") != 1 || strings.Contains(out, "error:") {
		t.Fatalf("terminal:\n%s", out)
	}
}

// promptOp sends session/prompt with an operationId on c and returns its result.
func promptOp(t *testing.T, c *rpcConn, sid, text, op string, id int) map[string]any {
	t.Helper()
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"` + text + `","operationId":"` + op + `"},"id":` + strconv.Itoa(id) + `}`)
	for {
		m := c.recv()
		if m["id"] == float64(id) {
			res, ok := m["result"].(map[string]any)
			if !ok {
				t.Fatalf("prompt %s: %v", op, m)
			}
			return res
		}
	}
}

func TestAnOperationIDRepeatedAfterARestartAnswersItsTurnAndRunsNoOther(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"done "}}, fakeopenai.Answer{Text: []string{"partial "}, Hold: true})
	h := crashHome(t, fake)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"ops"},"id":2}`)
	done := promptOp(t, c, "ops", "first", "op-done", 3)
	// A second turn is running (its model stream held) when the daemon dies.
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"ops","prompt":"second","operationId":"op-cut"},"id":4}`)
	waitUpdate(c, "agent_message_chunk")
	kill9(t, d)

	d = startDaemon(t, h, nil)
	c = dial(t, d.socket)
	c.initialize()
	again := promptOp(t, c, "ops", "first", "op-done", 5)
	if again["turnId"] != done["turnId"] || again["text"] != "done " || again["stopReason"] != "end_turn" {
		t.Fatalf("the finished turn repeated after a restart: %v, first %v", again, done)
	}
	cut := promptOp(t, c, "ops", "second", "op-cut", 6)
	if cut["stopReason"] != "cancelled" || cut["turnId"] == done["turnId"] || cut["turnId"] == "" {
		t.Fatalf("the interrupted turn repeated after a restart: %v", cut)
	}
	if again := promptOp(t, c, "ops", "second", "op-cut", 7); again["turnId"] != cut["turnId"] {
		t.Fatalf("a second repeat: %v, the first %v", again, cut)
	}
	c.conn.Close()
	if got := strings.Join(resume(t, d, "ops"), " "); got != "user assistant user marker!" {
		t.Fatalf("transcript: %s (one row per turn that ran)", got)
	}
	if n := fake.Count(); n != 2 {
		t.Fatalf("the model was called %d times, want 2", n)
	}
}

func TestChatStartsItsEphemeralDaemonAgainAfterKill9(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"partial words "}, Hold: true}, fakeopenai.Answer{Text: []string{"fine again"}})
	h := crashHome(t, fake)
	p := startPTY(t, h, "--session", "chat-auto") // no daemon: chat starts one
	p.waitFor("connected to", 1)
	p.typeLine("first")
	p.waitFor("partial words", 1)
	out, _, err := run(t, command(h, "status", "--json"))
	var st map[string]any
	if err != nil || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: %v %s", err, out)
	}
	pid := int(st["pid"].(float64))
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	p.waitFor("daemon restarted; session recovered, last turn interrupted", 1)
	p.typeLine("second")
	p.waitFor("fine again", 1)
	out, _, err = run(t, command(h, "status", "--json"))
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || int(st["pid"].(float64)) == pid {
		t.Fatalf("status after the restart: %v %s", err, out)
	}
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
	if n := strings.Count(p.out.String(), "partial words"); n != 1 {
		t.Fatalf("the streamed text shown %d times:\n%s", n, p.out.String())
	}
	// The daemon it started again is ephemeral too: it leaves after chat.
	sock := filepath.Join(h, ".zeroclaw", "data", "daemon.sock")
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(sock); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted ephemeral daemon still serves after chat left")
		}
	}
}

// socketProxy forwards connections from its own socket to the daemon's, so that a
// test can cut chat's connection while the daemon and its turn go on, and refuse
// new connections for a while.
type socketProxy struct {
	path   string
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  []net.Conn
	refuse bool
}

func newSocketProxy(t *testing.T, target string) *socketProxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "zcx")
	if err != nil {
		t.Fatal(err)
	}
	p := &socketProxy{path: filepath.Join(dir, "p.sock"), target: target}
	if p.ln, err = net.Listen("unix", p.path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.ln.Close(); p.cut(); os.RemoveAll(dir) })
	go func() {
		for {
			in, err := p.ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			refuse := p.refuse
			p.mu.Unlock()
			out, err := net.Dial("unix", p.target)
			if refuse || err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *socketProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *socketProxy) refusing(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

func TestChatCtrlCDuringAReconnectCancelsTheTurnOnceConnected(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[agents.default]\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)
	proxy := newSocketProxy(t, d.socket)
	p := startPTYWith(t, h, []string{"ZEROCLAW_SOCKET=" + proxy.path})
	p.waitFor("connected to", 1)
	p.typeLine(`/tool shell {"command":"sleep 30"}`)
	p.waitFor("⚙ shell", 1)
	proxy.refusing(true)
	proxy.cut() // the daemon and its turn go on
	p.waitFor("connection to the daemon lost; reconnecting… (Ctrl-C still cancels the turn)", 1)
	io.WriteString(p.stdin, "\x03")
	p.waitFor("^C cancelling", 1)
	proxy.refusing(false)
	p.waitFor("reconnected; the turn goes on", 1)
	p.waitFor("[cancelled]", 1)
	p.typeLine("after")
	p.waitFor("echo: after", 1)
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
	if strings.Count(p.out.String(), "⚙ shell") != 1 {
		t.Fatalf("the tool call was shown more than once:\n%s", p.out.String())
	}
}

func TestPipedChatReportsATurnARestartInterrupted(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"partial "}, Hold: true})
	h := crashHome(t, fake)
	d := startDaemon(t, h, nil)
	cmd := chatCmd(h, "first")
	var errOut syncBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	fake.Request(t, 0) // the turn runs
	kill9(t, d)
	startDaemon(t, h, nil)
	select {
	case err := <-exited:
		msg := errOut.String()
		if exitCode(err) != 3 || !strings.Contains(msg, "zeroclaw: daemon restarted; session recovered, last turn interrupted") ||
			!strings.Contains(msg, "the daemon restarted during the turn") {
			t.Fatalf("exit %v, stderr:\n%s", err, msg)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("chat did not finish; stderr:\n%s", errOut.String())
	}
}
