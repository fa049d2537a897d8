package main

import (
	"encoding/json/v2"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// shellUntilReleased runs until a file "release" appears in the workspace (the
// test creates it), after writing its pid like shellThatWaits.
const shellUntilReleased = `echo $$ > shell.pid; while [ ! -e release ]; do sleep 0.05; done; echo released`

// awaitLog waits until the daemon's log says s.
func awaitLog(t *testing.T, d *daemon, s string) {
	t.Helper()
	if _, ok := d.stderr.await(func(out string) bool { return strings.Contains(out, s) }, nil, 20*time.Second); !ok {
		t.Fatalf("the daemon never logged %q", s)
	}
}

func TestChatSteersTheStreamingTurnWithEnterAndStartsOneWithSteer(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	workspace := filepath.Join(h, ".zeroclaw", "data", "workspaces", "default")
	p := startPTY(t, h)
	p.waitFor("connected to", 1)
	p.typeLine(`/tool shell {"command":"` + shellUntilReleased + `"}`)
	p.waitFor("[y] allow once, [a] always, [n] reject", 1)
	p.typeLine("y")
	waitForShell(t, workspace)
	p.typeLine("go left") // Enter while the turn streams: a steer
	p.waitFor("(steering the turn", 1)
	awaitLog(t, d, "steer waiting for the running turn")
	p.typeLine("/queue later one") // the next prompt, not a steer
	p.waitFor("queued after this turn", 1)
	if err := os.WriteFile(filepath.Join(workspace, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitFor("» steered: go left", 1)
	p.waitFor("(joined turn turn_", 1)
	p.waitFor("echo: go left", 1) // the turn's next model call answered it
	p.waitFor("echo: later one", 1)
	// At the prompt, with no turn running, /steer starts one. (/help, typed while
	// a turn streams, waits for it: once it shows, the prompt reads again.)
	p.typeLine("/help")
	p.waitFor("/queue TEXT", 1)
	p.typeLine("/steer start over")
	p.waitFor("(no turn was running: started turn turn_", 1)
	p.waitFor("echo: start over", 1)
	p.typeLine("/quit")
	if err := p.exit(); err != nil {
		t.Fatalf("chat exit: %v", err)
	}
}

// A steer answered "injected" is durable: the daemon killed right after keeps it,
// after the step's tool result, in the transcript and in the model's context.
func TestKill9AfterASteerWasInjectedKeepsTheSteeredMessage(t *testing.T) {
	fake := fakeopenai.New(t,
		fakeopenai.Answer{Calls: []fakeopenai.Call{{ID: "call_1", Name: "write_file", Args: `{"path":"a.txt","content":"x"}`}}},
		fakeopenai.Answer{Text: []string{"partial "}, Hold: true},
		fakeopenai.Answer{Text: []string{"fine"}})
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	conf := fmt.Sprintf("[providers.fake]\nkind = \"openai\"\nbase_url = %q\nmodel = \"m\"\n\n"+
		"[agents.default]\nprovider = \"fake\"\nautonomy = \"supervised\"\n", fake.URL())
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600)
	d := startDaemon(t, h, nil)
	c := startTurn(t, d, "steer-k", "first")
	approval := waitUpdate(c, "approval_request")
	s := dial(t, d.socket)
	s.initialize()
	s.send(`{"jsonrpc":"2.0","method":"session/steer","params":{"sessionId":"steer-k","text":"and then stop"},"id":5}`)
	awaitLog(t, d, "steer waiting for the running turn")
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/approve","params":{"sessionId":"steer-k","requestId":%q,"decision":"allow_once"},"id":4}`,
		approval["requestId"]))
	for {
		m := s.recv()
		if m["id"] == float64(5) {
			if r, _ := m["result"].(map[string]any); r["outcome"] != "injected" {
				t.Fatalf("session/steer: %v", m)
			}
			break
		}
	}
	// The turn's next model call (held) carries it; the kill comes during that call.
	if got := roleContents(fake.Request(t, 1)); !strings.HasSuffix(got, "user:and then stop") {
		t.Fatalf("the call after the steer was sent %q", got)
	}
	kill9(t, d)

	d = startDaemon(t, h, nil)
	if got := strings.Join(resume(t, d, "steer-k"), " "); got != "user tool_call tool_result user marker!" {
		t.Fatalf("transcript after recovery: %s", got)
	}
	promptAndWait(t, d, "steer-k", "next")
	got := roleContents(fake.Request(t, 2))
	if !strings.Contains(got, "tool:wrote 1 bytes to a.txt | assistant:"+provider.SteeredReply+" | user:and then stop") ||
		strings.Index(got, "tool:") > strings.Index(got, "user:and then stop") {
		t.Fatalf("the model was given %q", got)
	}
}

func TestExportCommandPrintsMarkdownAndJSONLines(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"export-me"},"id":2}`)
	c.call(`{"jsonrpc":"2.0","method":"session/set","params":{"sessionId":"export-me","mode":"full"},"id":3}`)
	promptAndWait(t, d, "export-me", `/tool list_dir {\"path\":\".\"}\nlook around`)

	out, errOut, err := run(t, command(h, "export", "export-me"))
	if err != nil {
		t.Fatalf("zeroclaw export: %v\n%s", err, errOut)
	}
	for _, want := range []string{"# /tool list_dir", "## User · ", "### Tool call `list_dir` (tc_", "### Tool result `list_dir` (tc_",
		"## Assistant · ", "echo: look around"} {
		if !strings.Contains(out, want) {
			t.Errorf("zeroclaw export lacks %q:\n%s", want, out)
		}
	}
	out, errOut, err = run(t, command(h, "export", "export-me", "--format", "jsonl"))
	if err != nil {
		t.Fatalf("zeroclaw export --format jsonl: %v\n%s", err, errOut)
	}
	var roles []string
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v: %q", i, err, line)
		}
		if i == 0 {
			if m["type"] != "session" || m["sessionId"] != "export-me" {
				t.Errorf("the header: %v", m)
			}
			continue
		}
		roles = append(roles, fmt.Sprint(m["role"]))
	}
	if s := strings.Join(roles, " "); s != "user tool_call tool_result assistant" {
		t.Errorf("the rows: %s", s)
	}
	_, errOut, err = run(t, command(h, "export", "no-such-session"))
	if exitCode(err) != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("an unknown session: exit %v, %q", err, errOut)
	}
	_, errOut, err = run(t, command(h, "export", "export-me", "--format", "pdf"))
	if exitCode(err) != 1 || !strings.Contains(errOut, "markdown or jsonl") {
		t.Errorf("a bad format: exit %v, %q", err, errOut)
	}
}

func TestTUIUnderTmuxSteersItsTurnWithEnterAndQueuesWithTab(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	workspace := filepath.Join(h, ".zeroclaw", "data", "workspaces", "default")
	p := startTmux(t, h, 100, 30)
	p.waitStatus("● connected")
	p.typeText(`/tool shell {"command":"` + shellUntilReleased + `"}`)
	p.keys("Enter")
	p.waitFor("Allow shell?")
	p.keys("y")
	waitForShell(t, workspace)
	p.typeText("go left")
	p.keys("Enter") // the turn streams: a steer
	awaitLog(t, d, "steer waiting for the running turn")
	p.typeText("later one")
	p.keys("Tab") // the next prompt: it waits for the turn
	p.waitFor("queued: it runs once the turn is over")
	if err := os.WriteFile(filepath.Join(workspace, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	screen := p.waitFor("echo: later one")
	steered, answered, queued := strings.Index(screen, "› go left"), strings.Index(screen, "echo: go left"), strings.Index(screen, "echo: later one")
	if steered < 0 || answered < steered || queued < answered {
		t.Fatalf("the steer, its answer and the queued prompt are out of order:\n%s", screen)
	}
}
