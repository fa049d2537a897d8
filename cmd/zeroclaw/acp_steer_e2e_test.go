//go:build unix

package main

import (
	"encoding/json/v2"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

// Steering over ACP (docs/protocol.md, "ACP", the _session/steering row) and an
// automatic compaction as an editor sees it.

// steerACP sends _session/steering with text, and _meta.steering.idleBehavior when
// idle is set; it returns the answer's outcome and reason, or the error's code.
func steerACP(t *testing.T, e *editor, sid, text, idle string) (outcome, reason string, code int) {
	t.Helper()
	params := map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
	if idle != "" {
		params["_meta"] = map[string]any{"steering": map[string]any{"idleBehavior": idle}}
	}
	raw, err := e.conn.CallExtension(ctxFor(t), "_session/steering", params)
	if err != nil {
		return "", "", codeOfACP(err)
	}
	var r struct {
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("_session/steering answered %s: %v", raw, err)
	}
	return r.Outcome, r.Reason, 0
}

// awaitLogCount waits until the daemon's log says s n times.
func awaitLogCount(t *testing.T, d *daemon, s string, n int) {
	t.Helper()
	if _, ok := d.stderr.await(func(out string) bool { return strings.Count(out, s) >= n }, nil, 30*time.Second); !ok {
		t.Fatalf("the daemon did not log %q %d times", s, n)
	}
}

// promptAsync runs a prompt of text and hands its answer to the returned channel.
func promptAsync(t *testing.T, e *editor, sid, text string) <-chan acpsdk.PromptResponse {
	done := make(chan acpsdk.PromptResponse, 1)
	go func() {
		res, err := e.prompt(sid, acpsdk.TextBlock(text))
		if err != nil {
			t.Errorf("prompt %q: %v", text, err)
		}
		done <- res
	}()
	return done
}

func answerOf(t *testing.T, done <-chan acpsdk.PromptResponse, what string) acpsdk.PromptResponse {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no answer within 60s", what)
		return acpsdk.PromptResponse{}
	}
}

// userChunks are the texts of the user_message_chunk updates.
func userChunks(us []map[string]any) []string {
	var out []string
	for _, u := range us {
		if u["sessionUpdate"] == "user_message_chunk" {
			out = append(out, u["content"].(map[string]any)["text"].(string))
		}
	}
	return out
}

const heldShell = "/tool shell {\"command\":\"" + `echo $$ > shell.pid; while [ ! -e release ]; do sleep 0.05; done; echo released` + "\"}\nwork"

// The editor's steer joins its running turn after the tool result: stored in that
// order, answered "injected" before the turn ends, not echoed back; the turn goes
// on to answer it, and its prompt answers end_turn.
func TestACPSteeringJoinsTheEditorsRunningTurn(t *testing.T) {
	h, project := acpHome(t)
	d := startDaemon(t, h, nil)
	e := startEditor(t, h, nil, "--agent", "full")
	init := e.initialize(acpsdk.ClientCapabilities{})
	if st, _ := init.Meta["steering"].(map[string]any); st["supported"] != true {
		t.Fatalf("initialize _meta = %v, want steering.supported", init.Meta)
	}
	sid := e.newSession(project)

	done := promptAsync(t, e, sid, heldShell)
	waitForShell(t, project)
	steered := make(chan [3]any, 1)
	go func() {
		o, r, c := steerACP(t, e, sid, "use the v2 API instead", "")
		steered <- [3]any{o, r, c}
	}()
	awaitLog(t, d, "steer waiting for the running turn")
	select {
	case got := <-steered:
		t.Fatalf("the steer was answered %v before the tool ended", got)
	default:
	}
	if err := os.WriteFile(filepath.Join(project, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := <-steered; got[0] != "injected" || got[2] != 0 {
		t.Fatalf("_session/steering = %v, want injected", got)
	}
	if res := answerOf(t, done, "the steered prompt"); res.StopReason != "end_turn" {
		t.Fatalf("the steered turn's prompt: %s", res.StopReason)
	}
	updates := e.take()
	if got := userChunks(updates); len(got) != 0 {
		t.Errorf("the editor's own prompt and steer came back as %q", got)
	}
	if got := textOf(updates, "agent_message_chunk"); !strings.Contains(got, "echo: use the v2 API instead") {
		t.Errorf("the turn did not answer the steer: %q", got)
	}
	if got := strings.Join(resume(t, d, sid), " "); got != "user tool_call tool_result user assistant" {
		t.Errorf("transcript %s, want the steer after the tool result", got)
	}

	// Another client's steer of the editor's turn reaches the editor as a user
	// message, in the turn's stream.
	os.Remove(filepath.Join(project, "release"))
	os.Remove(filepath.Join(project, "shell.pid"))
	done = promptAsync(t, e, sid, heldShell)
	waitForShell(t, project)
	c := dial(t, d.socket)
	c.initialize()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/steer","params":{"sessionId":%q,"text":"from the terminal"},"id":7}`, sid))
	awaitLogCount(t, d, "steer waiting for the running turn", 2)
	os.WriteFile(filepath.Join(project, "release"), nil, 0o600)
	if res := answerOf(t, done, "the prompt another client steered"); res.StopReason != "end_turn" {
		t.Fatalf("stop %s", res.StopReason)
	}
	updates = e.take()
	if got := userChunks(updates); len(got) != 1 || got[0] != "from the terminal" {
		t.Errorf("user_message_chunk %q, want the other client's steer", got)
	}
	if got := textOf(updates, "agent_message_chunk"); !strings.Contains(got, "echo: from the terminal") {
		t.Errorf("the turn did not answer the other client's steer: %q", got)
	}
}

// With no turn of the editor running, a steer asking promptRequired is left to the
// editor (nothing stored); without it, it starts a turn whose reply reaches the
// editor. Bad input is refused.
func TestACPSteeringWithNoTurnRunningAndBadInput(t *testing.T) {
	h, project := acpHome(t)
	d := startDaemon(t, h, nil)
	e := startEditor(t, h, nil, "--agent", "full")
	e.initialize(acpsdk.ClientCapabilities{})
	sid := e.newSession(project)
	if stop := e.mustPrompt(sid, "hello"); stop != "end_turn" {
		t.Fatalf("prompt: %s", stop)
	}
	e.take()

	if o, r, code := steerACP(t, e, sid, "left to the editor", "promptRequired"); o != "promptRequired" || r != "noRunningTurn" {
		t.Fatalf("idle steer with promptRequired: %q %q %d", o, r, code)
	}
	if got := strings.Join(resume(t, d, sid), " "); got != "user assistant" {
		t.Fatalf("a promptRequired steer stored something: %s", got)
	}

	if o, _, code := steerACP(t, e, sid, "start one", ""); o != "startedNewTurn" {
		t.Fatalf("idle steer: %q %d, want startedNewTurn", o, code)
	}
	wait.For(t, "the started turn's reply", 30*time.Second, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return strings.Contains(textOf(e.updates, "agent_message_chunk"), "echo: start one")
	})
	if got := userChunks(e.take()); len(got) != 0 {
		t.Errorf("the started turn's user_message came back to the editor: %q", got)
	}

	bad := []struct {
		name, params string
		code         int
	}{
		{"empty text", `{"sessionId":%q,"prompt":[{"type":"text","text":"  "}]}`, -32602},
		{"no prompt", `{"sessionId":%q}`, -32602},
		{"an image", `{"sessionId":%q,"prompt":[{"type":"text","text":"see"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}`, -32602},
		{"an unknown idleBehavior", `{"sessionId":%q,"prompt":[{"type":"text","text":"x"}],"_meta":{"steering":{"idleBehavior":"queue"}}}`, -32602},
		{"an unknown session", `{"sessionId":"never-made%.0s","prompt":[{"type":"text","text":"x"}]}`, -32002},
	}
	for _, b := range bad {
		_, err := e.conn.CallExtension(ctxFor(t), "_session/steering", jsonRaw(fmt.Sprintf(b.params, sid)))
		if codeOfACP(err) != b.code {
			t.Errorf("%s: %v, want %d", b.name, err, b.code)
		}
	}
	wait.For(t, "the started turn to end", 30*time.Second, func() bool {
		return strings.Join(resume(t, d, sid), " ") == "user assistant user assistant"
	})
}

// jsonRaw is params sent as they are.
type jsonRaw string

func (j jsonRaw) MarshalJSON() ([]byte, error) { return []byte(j), nil }

// A prompt the editor sends while its turn runs is not a steer: it waits for the
// turn, and runs as the next one.
func TestACPAPromptDuringARunningTurnRunsNext(t *testing.T) {
	h, project := acpHome(t)
	d := startDaemon(t, h, nil)
	e := startEditor(t, h, nil, "--agent", "full")
	e.initialize(acpsdk.ClientCapabilities{})
	sid := e.newSession(project)
	first := promptAsync(t, e, sid, heldShell)
	waitForShell(t, project)
	second := promptAsync(t, e, sid, "the next one")
	awaitLog(t, d, "waiting for the turn slot")
	os.WriteFile(filepath.Join(project, "release"), nil, 0o600)
	if res := answerOf(t, first, "the first prompt"); res.StopReason != "end_turn" {
		t.Fatalf("first: %s", res.StopReason)
	}
	if res := answerOf(t, second, "the second prompt"); res.StopReason != "end_turn" {
		t.Fatalf("second: %s", res.StopReason)
	}
	got := textOf(e.take(), "agent_message_chunk")
	if i, j := strings.Index(got, "echo: work"), strings.Index(got, "echo: the next one"); i < 0 || j < i {
		t.Errorf("replies %q: the second prompt's should follow the first's", got)
	}
	if got := strings.Join(resume(t, d, sid), " "); got != "user tool_call tool_result assistant user assistant" {
		t.Errorf("transcript %s", got)
	}
}

// An automatic compaction reaches an editor as a manual one does: logged by the
// bridge, not forwarded, and the session goes on.
func TestACPAutomaticCompactionIsLoggedLikeAManualOne(t *testing.T) {
	h, project := acpHome(t)
	writeConfig(t, h, acpConfig+"\n[providers.small]\nkind = \"echo\"\ncontext_window = 1000\n\n[agents.small]\nprovider = \"small\"\nautonomy = \"full\"\n")
	e := startEditor(t, h, nil, "--agent", "small")
	e.initialize(acpsdk.ClientCapabilities{})
	sid := e.newSession(project)
	for _, text := range []string{strings.Repeat("w ", 500), "second question", "third question"} {
		if stop := e.mustPrompt(sid, text); stop != "end_turn" {
			t.Fatalf("prompt: %s", stop)
		}
	}
	waitLog(t, e, regexp.MustCompile(`the daemon compacted a session's model context.*auto=true`), 1)
	for _, u := range e.take() {
		if k := u["sessionUpdate"]; k != "agent_message_chunk" && k != "usage_update" && k != "available_commands_update" && k != "current_mode_update" {
			t.Errorf("the editor was sent %v", u)
		}
	}
	if res, err := e.prompt(sid, acpsdk.TextBlock("fourth question")); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("after the compaction: %v %v", res, err)
	}
	if got := textOf(e.take(), "agent_message_chunk"); got != "echo: fourth question" {
		t.Errorf("after the compaction echo answered %q", got)
	}
}
