package tui

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

func TestStreamedReplyRendersMarkdownAndCode(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.prompt = func(text string, push func(client.Update)) *client.PromptResult {
		push(client.Update{SessionID: "s1", TurnID: "t1", Type: client.UserMessage, Text: text})
		for _, c := range []string{"# Title\n\nSome **bold** text and a list:\n\n", "- one\n- two\n\n", "```go\nfunc main() {}\n```\n"} {
			push(client.Update{SessionID: "s1", TurnID: "t1", Type: client.AgentMessageChunk, Text: c})
		}
		return &client.PromptResult{SessionID: "s1", TurnID: "t1", StopReason: client.StopEndTurn}
	}
	u.typeText("show me")
	u.press("enter")
	u.wantCall(`session/prompt {"prompt":"show me","sessionId":"s1"}`)
	u.golden("markdown")
	if u.m.title != "show me" {
		t.Fatalf("title %q: want the first line of the first prompt", u.m.title)
	}
}

func TestToolCardApprovalOverlayAndFoldedOutput(t *testing.T) {
	u := newUI(t, 80, 24)
	u.push(client.Update{TurnID: "t1", Type: client.UserMessage, Text: `/tool shell {"command":"seq 15"}`},
		client.Update{TurnID: "t1", Type: client.ToolCall, ToolCallID: "c1", Name: "shell", RawInput: jsontext.Value(`{"command":"seq 15"}`)},
		client.Update{TurnID: "t1", Type: client.ApprovalRequest, RequestID: "r1", ToolCallID: "c1", Name: "shell", RawInput: jsontext.Value(`{"command":"seq 15"}`), TimeoutSecs: 120})
	u.golden("approval")
	u.press("y")
	u.wantCall(`session/approve {"decision":"allow_once","requestId":"r1","sessionId":"s1"}`)
	if u.m.overlayActive() {
		t.Fatal("the overlay stays after y")
	}
	u.push(client.Update{TurnID: "t1", Type: client.ToolResult, ToolCallID: "c1", Name: "shell", RawOutput: lines(15, "%d")},
		chunk("t1", "echo: shell -> 1"))
	u.golden("tool_folded")
	u.press("ctrl+o")
	u.wantScreen("│ 15")
	u.press("ctrl+o")
	u.wantScreen("5 more lines (Ctrl-O unfolds)")
}

// Ctrl-O unfolds the newest foldable card on screen, not every card: scrolled up to
// an older one, it unfolds that one.
func TestCtrlOUnfoldsTheNewestCardOnScreen(t *testing.T) {
	u := newUI(t, 80, 24)
	card := func(id, prefix string) {
		u.push(client.Update{TurnID: "t1", Type: client.ToolCall, ToolCallID: id, Name: "shell", RawInput: jsontext.Value(`{"command":"seq 12"}`)},
			client.Update{TurnID: "t1", Type: client.ToolResult, ToolCallID: id, Name: "shell", RawOutput: lines(12, prefix+"%d")})
	}
	card("a", "a")
	u.push(chunk("t1", lines(30, "reply line %d\n")))
	card("b", "b")
	u.wantScreen("│ b10")
	u.press("ctrl+o")
	u.wantScreen("│ b12")
	if u.m.cards["a"].unfolded {
		t.Fatal("Ctrl-O unfolded a card that is not on screen")
	}
	u.press("ctrl+o")
	u.wantScreen("2 more lines (Ctrl-O unfolds)")
	for range 5 {
		u.press("pgup")
	}
	u.wantScreen("│ a10")
	if strings.Contains(u.screen(), "│ b") {
		t.Fatalf("scrolled to the top, the newer card is still on screen:\n%s", u.screen())
	}
	u.press("ctrl+o")
	u.wantScreen("│ a12")
	if !u.m.cards["a"].unfolded || u.m.cards["b"].unfolded {
		t.Fatal("Ctrl-O at the top did not unfold the card there alone")
	}
	for range 10 {
		u.press("pgdown")
	}
	u.wantScreen("reply line 30")
	u.push(chunk("t1", "\n\n"+lines(30, "more %d\n")))
	u.wantScreen("more 30") // drawn: Ctrl-O acts on what the screen shows
	u.press("ctrl+o")       // only a reply on screen
	u.wantScreen("Ctrl-O: no folded tool output or thought on screen")
}

func TestApprovalKeysAndAnotherClientsAnswer(t *testing.T) {
	for _, c := range []struct{ key, decision string }{
		{"enter", client.AllowOnce}, {"a", client.AllowAlways}, {"n", client.RejectOnce}, {"esc", client.RejectOnce},
	} {
		u := newUI(t, 80, 24)
		u.push(client.Update{TurnID: "t1", Type: client.ApprovalRequest, RequestID: "r1", ToolCallID: "c1", Name: "write_file", RawInput: jsontext.Value(`{"path":"a"}`)})
		u.wantScreen("Allow write_file?")
		u.press("x") // not an answer
		if !u.m.overlayActive() {
			t.Fatal("x closed the overlay")
		}
		u.press(c.key)
		u.wantCall(`session/approve {"decision":"` + c.decision + `"`)
	}
	u := newUI(t, 80, 24)
	u.push(client.Update{TurnID: "t1", Type: client.ApprovalRequest, RequestID: "r1", ToolCallID: "c1", Name: "shell", RawInput: jsontext.Value(`{}`)})
	u.push(client.Update{Type: client.RequestResolved, RequestID: "r1"})
	if u.m.overlayActive() || strings.Contains(u.screen(), "Allow shell") {
		t.Fatalf("request_resolved left the overlay:\n%s", u.screen())
	}
	if u.b.called("session/approve") {
		t.Fatal("answered a request another client answered")
	}
}

func TestDiffOfAFileEditIsShown(t *testing.T) {
	u := newUI(t, 80, 24)
	u.push(client.Update{TurnID: "t1", Type: client.ToolCall, ToolCallID: "c1", Name: "edit_file", RawInput: jsontext.Value(`{"path":"main.go"}`)})
	u.pushRaw(`{"sessionId":"s1","turnId":"t1","seq":9,"type":"tool_result","toolCallId":"c1","name":"edit_file","rawOutput":"edited","isError":false,` +
		`"diff":{"path":"/ws/main.go","oldText":"a\nb\nc\nd\ne\nf\ng\nh\n","newText":"a\nb\nc\nD\ne\nf\ng\nh\nnew\n"}}`)
	u.golden("diff")
}

func TestStatusLineShowsControlsUsageAndConnection(t *testing.T) {
	u := newUI(t, 80, 24)
	u.pushRaw(`{"sessionId":"s1","seq":3,"type":"session_info","mode":"full","model":"gpt-x","title":"Refactor the parser"}`)
	u.pushRaw(`{"sessionId":"s1","turnId":"t1","seq":4,"type":"usage","inputTokens":5,"outputTokens":7,"contextTokens":1234,"contextWindow":32768}`)
	u.wantScreen("Refactor the parser · default · gpt-x · full · ctx 1.2k/32k (3%)")
	u.wantScreen("● connected")
	u.send(connMsg{Kind: client.ConnectionLost, InFlight: true})
	u.wantScreen("● reconnecting…")
	u.send(connMsg{Kind: client.Reconnected, Restarted: true, InFlight: true})
	u.wantScreen("● daemon restarted")
	u.wantScreen("daemon restarted; session recovered, last turn interrupted")
	u.golden("status")
}

func TestPlanIsShownAboveTheInput(t *testing.T) {
	u := newUI(t, 80, 24)
	u.pushRaw(`{"sessionId":"s1","turnId":"t1","seq":5,"type":"plan","entries":[{"content":"read the code","status":"completed"},` +
		`{"content":"write the test","status":"in_progress"},{"content":"fix the bug","status":"pending","priority":"high"}]}`)
	u.golden("plan")
}

func TestThoughtsAreFoldedAndUnfold(t *testing.T) {
	u := newUI(t, 80, 24)
	u.push(client.Update{TurnID: "t1", Type: client.AgentThoughtChunk, Text: "first I look\nthen I "},
		client.Update{TurnID: "t1", Type: client.AgentThoughtChunk, Text: "answer"}, chunk("t1", "done"))
	u.wantScreen("∴ thinking (2 lines, Ctrl-O unfolds)")
	u.press("ctrl+o")
	u.wantScreen("∴ then I answer")
}

func TestCommandsCompleteAndUnknownSlashLinesArePrompts(t *testing.T) {
	u := newUI(t, 80, 24)
	u.typeText("/se")
	u.press("tab")
	if v := u.m.input.Value(); v != "/sessions " {
		t.Fatalf("tab completed to %q", v)
	}
	u.m.input.Reset()
	u.typeText("/mo")
	u.press("tab")
	if v := u.m.input.Value(); v != "/mode" || !strings.Contains(u.m.hint, "/model  /mode") {
		t.Fatalf("tab: %q, hint %q", v, u.m.hint)
	}
	u.m.input.Reset()
	u.typeText(`/tool shell {"command":"echo hi"}`)
	u.press("enter")
	u.wantCall(`session/prompt {"prompt":"/tool shell {\"command\":\"echo hi\"}"`)
	u.typeText("/title Better name")
	u.press("enter")
	u.wantCall(`session/set {"sessionId":"s1","title":"Better name"}`)
}

func TestMissingDaemonMethodsAreSaidNotCrashed(t *testing.T) {
	u := newUI(t, 80, 24)
	for _, c := range []string{"/model", "/compact", "/title x"} {
		u.typeText(c)
		u.press("enter")
	}
	u.wantScreen("listing models (models/list): this daemon does not offer it")
	u.wantScreen("compacting: this daemon does not offer it")
	u.wantScreen("renaming the session: this daemon does not offer it")
}

func TestModelAndModePickersSetTheSession(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.answers["models/list"] = map[string]any{"models": []map[string]any{{"id": "small", "current": true}, {"id": "large", "current": false}}, "source": "config"}
	u.b.answers["session/set"] = map[string]any{"sessionId": "s1", "mode": "supervised", "model": "large", "title": ""}
	u.typeText("/model")
	u.press("enter")
	u.golden("model_picker")
	u.press("down")
	u.press("enter")
	u.wantCall(`session/set {"model":"large","sessionId":"s1"}`)
	u.wantScreen("· large ·")
	u.typeText("/mode")
	u.press("enter")
	u.wantScreen("Ask before changes")
	u.press("up")
	u.press("enter")
	u.wantCall(`session/set {"mode":"readonly","sessionId":"s1"}`)
}

func TestSessionsPickerResumesRenamesDeletesForks(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.sessions = []client.ListedSession{
		{SessionID: "s1", AgentAlias: "default", Title: "current one", State: "idle", LastActivity: "2020-01-02T03:04:05Z"},
		{SessionID: "s2", AgentAlias: "default", Title: "older one", State: "closed", LastActivity: "2020-01-01T03:04:05Z"},
	}
	u.b.answers["session/set"] = map[string]any{}
	u.b.answers["session/delete"] = map[string]any{"sessionId": "s2", "deleted": true}
	u.b.answers["session/fork"] = map[string]any{"sessionId": "s3"}
	// A fork has no updates to replay (its seqs start at 1): it is shown from its
	// transcript rows.
	u.b.answers["session/messages"] = map[string]any{"sessionId": "s3", "total": 5, "messages": []map[string]any{
		{"index": 0, "role": "user", "text": "old question"},
		{"index": 1, "role": "tool_call", "text": `{"path":"a.txt"}`, "toolCallId": "tc_1", "name": "read_file"},
		{"index": 2, "role": "tool_result", "text": "file text", "toolCallId": "tc_1", "name": "read_file"},
		{"index": 3, "role": "assistant", "text": "old answer"},
		{"index": 4, "role": "marker", "text": "turn interrupted: the daemon stopped before it finished", "interrupted": true},
	}}
	u.typeText("/sessions")
	u.press("enter")
	u.golden("sessions_picker")
	u.press("d") // the open session is not deleted
	if u.m.picker.confirm {
		t.Fatal("offered to delete the open session")
	}
	u.press("down")
	u.press("r")
	u.typeText("renamed")
	u.press("enter")
	u.wantCall(`session/set {"sessionId":"s2","title":"renamed"}`)
	u.press("d")
	u.wantScreen(`delete "renamed"? y deletes`)
	u.press("n")
	if u.b.called("session/delete") {
		t.Fatal("deleted without y")
	}
	u.press("d")
	u.press("y")
	u.wantCall(`session/delete {"sessionId":"s2"}`)
	// The fork keeps the source's controls: session/set with no change reads them.
	u.b.answers["session/set"] = map[string]any{"sessionId": "s3", "mode": "full", "model": "big", "title": "current one"}
	u.press("f") // forks the selected one (s1 now)
	u.wantCall(`session/fork {"sessionId":"s1"}`)
	u.wantCall(`session/set {"sessionId":"s3"}`)
	u.wantCall(`session/new {"agentAlias":"default","sessionId":"s3","keep_siblings":true}`)
	u.wantCall(`session/attach {"afterSeq":0,"sessionId":"s3"}`)
	u.wantCall(`session/messages {"limit":1000,"sessionId":"s3"}`)
	u.wantScreen(`forked from "current one" (s1)`)
	u.wantScreen("› old question")
	u.wantScreen("✓ read_file a.txt")
	u.wantScreen("│ file text")
	u.wantScreen("old answer")
	u.wantScreen("turn interrupted: the daemon stopped")
	if u.m.sid != "s3" || !strings.Contains(statusOf(u.screen()), " current one · default · big · full") {
		t.Fatalf("session %s after the fork:\n%s", u.m.sid, u.screen())
	}
	if s := u.screen(); strings.Index(s, "forked from") < strings.Index(s, "old answer") || strings.Index(s, "session s3") > strings.Index(s, "old question") {
		t.Fatalf("the transcript is not between the session's line and the fork's notice:\n%s", s)
	}

	// A transcript that cannot be read is said; the session still opens.
	u.b.errs["session/messages"] = &client.Error{Code: client.CodeInternalError, Message: "storage failed"}
	u.b.answers["session/fork"] = map[string]any{"sessionId": "s4"}
	u.typeText("/sessions")
	u.press("enter")
	u.press("f")
	u.wantScreen("reading the session's transcript: ")
	u.wantScreen("storage failed")
	if u.m.sid != "s4" {
		t.Fatalf("session %s after a fork whose transcript failed", u.m.sid)
	}
}

// rowsAnswer answers session/messages from rows as the daemon does: the newest
// limit rows with index < before.
func rowsAnswer(rows ...string) func(map[string]any) any {
	return func(p map[string]any) any {
		var out []map[string]any
		for i, r := range rows {
			role, text, _ := strings.Cut(r, ":")
			if b, ok := p["before"].(float64); ok && i >= int(b) {
				break
			}
			out = append(out, map[string]any{"index": i, "role": role, "text": text})
		}
		if l := int(p["limit"].(float64)); len(out) > l {
			out = out[len(out)-l:]
		}
		return map[string]any{"messages": out, "total": len(rows)}
	}
}

// A resumed session shows the rows its replay lacks (a fork's copied rows, turns the
// replay log dropped) before the replayed turns; a complete replay reads one row.
func TestResumeShowsTheRowsTheReplayLacks(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.sessions = []client.ListedSession{{SessionID: "s2", AgentAlias: "default", Title: "the fork"}}
	u.b.answers["session/messages"] = rowsAnswer("user:old question", "assistant:old answer", "user:new question", "assistant:new answer")
	u.b.attach = []client.Update{{TurnID: "t9", Seq: 1, Type: client.UserMessage, Text: "new question"}, chunk("t9", "new answer")}
	u.typeText("/sessions")
	u.press("enter")
	u.press("enter")
	u.wantCall(`session/messages {"before":1,"limit":1,"sessionId":"s2"}`)
	u.wantCall(`session/messages {"limit":200,"sessionId":"s2"}`)
	u.wantCall(`session/messages {"before":2,"limit":1000,"sessionId":"s2"}`)
	s := u.screen()
	order := []string{"session s2", "old question", "old answer", "new question", "new answer"}
	for i := 1; i < len(order); i++ {
		if strings.Index(s, order[i-1]) < 0 || strings.Index(s, order[i-1]) > strings.Index(s, order[i]) {
			t.Fatalf("%q is not before %q:\n%s", order[i-1], order[i], s)
		}
	}
	if strings.Count(s, "› new question") != 1 || !strings.Contains(statusOf(s), " the fork · default") {
		t.Fatalf("a replayed turn is shown twice:\n%s", s)
	}

	// A complete replay: its first prompt is the transcript's first row.
	u = newUI(t, 80, 24)
	u.b.sessions = []client.ListedSession{{SessionID: "s2", AgentAlias: "default", Title: "whole"}}
	u.b.answers["session/messages"] = rowsAnswer("user:first", "assistant:one")
	u.b.attach = []client.Update{{TurnID: "t1", Seq: 1, Type: client.UserMessage, Text: "first"}, chunk("t1", "one")}
	u.typeText("/sessions")
	u.press("enter")
	u.press("enter")
	u.wantScreen("› first")
	if strings.Count(u.screen(), "› first") != 1 || u.b.called(`session/messages {"limit":200`) {
		t.Fatalf("a complete replay got rows added:\n%s\ncalls: %v", u.screen(), u.b.calls)
	}
}

// statusOf is a screen's last line.
func statusOf(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCtrlCCancelsTheTurnAndTwiceQuits(t *testing.T) {
	u := newUI(t, 80, 24)
	u.push(client.Update{TurnID: "t1", Type: client.UserMessage, Text: "long"})
	u.press("ctrl+c")
	u.wantCall(`session/cancel {"sessionId":"s1"}`)
	if u.quit {
		t.Fatal("one Ctrl-C quit")
	}
	u.press("ctrl+c")
	if !u.quit {
		t.Fatal("a second Ctrl-C did not quit")
	}
}

func TestInputHistoryAndMultiLine(t *testing.T) {
	u := newUI(t, 80, 24)
	u.typeText("first")
	u.press("enter")
	u.typeText("line one")
	u.press("alt+enter")
	u.typeText("line two")
	if v := u.m.input.Value(); v != "line one\nline two" {
		t.Fatalf("input %q", v)
	}
	u.golden("multiline")
	u.press("enter")
	u.wantCall(`session/prompt {"prompt":"line one\nline two"`)
	u.typeText("draft")
	u.press("up")
	if v := u.m.input.Value(); v != "line one\nline two" {
		t.Fatalf("up: %q", v)
	}
	u.press("up") // the cursor is on the last line: up moves it first
	u.press("up")
	if v := u.m.input.Value(); v != "first" {
		t.Fatalf("up up up: %q", v)
	}
	u.press("down")
	u.press("down")
	u.press("down")
	if v := u.m.input.Value(); v != "draft" {
		t.Fatalf("down to the draft: %q", v)
	}
}

func TestElicitationFormWithChoices(t *testing.T) {
	u := newUI(t, 80, 24)
	reply := make(chan client.ElicitationResult, 1)
	u.send(elicitMsg{e: client.Elicitation{SessionID: "s1", Mode: "form", Message: "Which colour?",
		RequestedSchema: jsontext.Value(`{"type":"object","properties":{"answer":{"type":"string","enum":["red","green","blue"]}}}`)}, reply: reply})
	u.wantScreen("Which colour?")
	u.wantScreen("green")
	u.press("down")
	u.press("enter")
	select {
	case r := <-reply:
		if r.Action != "accept" || r.Content["answer"] != "green" {
			t.Fatalf("answer %+v", r)
		}
	default:
		t.Fatalf("no answer after enter:\n%s", u.screen())
	}
	second := make(chan client.ElicitationResult, 1)
	u.send(elicitMsg{e: client.Elicitation{Message: "Name?", RequestedSchema: jsontext.Value(`{}`)}, reply: reply})
	u.send(elicitMsg{e: client.Elicitation{Message: "Second question?", RequestedSchema: jsontext.Value(`{}`)}, reply: second})
	u.wantScreen("Name?")
	u.press("esc")
	if r := <-reply; r.Action != "decline" {
		t.Fatalf("esc: %+v", r)
	}
	u.wantScreen("Second question?") // it waited for the first
	u.press("ctrl+c")
	if r := <-second; r.Action != "cancel" {
		t.Fatalf("ctrl+c: %+v", r)
	}
}

func TestAttachShowsProgressAndGoesWithTheNextPrompt(t *testing.T) {
	u := newUI(t, 80, 24)
	u.m.inbox.send = func(msg tea.Msg) {} // progress messages are checked via the end state
	u.typeText("/attach /tmp/notes.txt")
	u.press("enter")
	u.wantCall(`upload {"path":"/tmp/notes.txt"}`)
	u.wantScreen("attached /ws/notes.txt (10 bytes)")
	if len(u.m.attached) != 1 {
		t.Fatal("the upload is not kept for the next prompt")
	}
	u.m.upload = &uploadState{name: "big.bin", done: 512, total: 1024, bar: u.m.progressBar()}
	u.wantScreen("uploading big.bin")
	u.wantScreen("512/1024 bytes")
}

func TestScrollAndResize(t *testing.T) {
	u := newUI(t, 80, 24)
	for i := range 40 {
		u.push(client.Update{TurnID: "t", Type: client.UserMessage, Text: "question " + string(rune('A'+i%26))},
			chunk("t"+string(rune('a'+i%26)), "answer"))
	}
	bottom := u.screen()
	u.press("pgup")
	if u.screen() == bottom {
		t.Fatal("pgup did not scroll")
	}
	u.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	for range 20 {
		u.press("pgdown")
	}
	if u.screen() != bottom {
		t.Fatalf("pgdown did not come back to the bottom:\n%s", u.screen())
	}
	for range 200 {
		u.press("pgup")
	}
	u.wantScreen("session s1")
	for _, size := range [][2]int{{80, 24}, {40, 12}, {120, 40}, {80, 24}} {
		u.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		u.fits()
	}
}

func TestColoursFollowNoColorAndTheBackground(t *testing.T) {
	u := newUI(t, 80, 24)
	u.push(client.Update{TurnID: "t1", Type: client.ToolCall, ToolCallID: "c1", Name: "shell", RawInput: jsontext.Value(`{"command":"ls"}`)})
	card, _ := u.m.rend.toolCard(u.m.cards["c1"].tool, 80, false)
	status := u.m.statusLine(80) + strings.Join(card, "\n")
	if strings.Contains(status, "\x1b[38;") || strings.Contains(status, "\x1b[48;") {
		t.Fatalf("NO_COLOR output carries colours: %q", status)
	}
	c := New(Options{Dark: true})
	dark := c.th.toolName.Render("x")
	if !strings.Contains(dark, "\x1b[") || !strings.Contains(dark, "38;") {
		t.Fatalf("no colour without NO_COLOR: %q", dark)
	}
	c.Update(tea.BackgroundColorMsg{Color: lightGrey{}})
	if c.th.dark || c.th.toolName.Render("x") == dark {
		t.Fatal("a light background kept the dark colours")
	}
}

type lightGrey struct{}

func (lightGrey) RGBA() (r, g, b, a uint32) { return 0xeeee, 0xeeee, 0xeeee, 0xffff }

func TestScrolledUpTheTextStaysPutWhileTheReplyStreams(t *testing.T) {
	u := newUI(t, 80, 24)
	for i := range 30 {
		u.push(chunk("t"+string(rune('a'+i%26))+string(rune('a'+i/26)), "answer "+string(rune('A'+i%26))))
	}
	u.press("pgup")
	before := u.screen()
	u.push(chunk("tz", "streaming "), chunk("tz", "more\n\nand a new paragraph\n\nand another"))
	if u.screen() != before {
		t.Fatalf("the scrolled-up window moved while the reply streamed:\n--- before\n%s--- after\n%s", before, u.screen())
	}
	for range 10 {
		u.press("pgdown")
	}
	u.wantScreen("and another")
}

func TestCompactNewAndUploadProgress(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.answers["session/compact"] = map[string]any{"sessionId": "s1", "compacted": true, "before": 900, "after": 300}
	u.typeText("/compact keep the decisions")
	u.press("enter")
	u.wantCall(`session/compact {"instructions":"keep the decisions","operationId":"op_`)
	u.pushRaw(`{"sessionId":"s1","turnId":"t0","seq":6,"type":"usage","inputTokens":5,"outputTokens":7,"contextTokens":3000,"contextWindow":32768}`)
	u.wantScreen("ctx 3.0k/32k (9%)")
	u.pushRaw(`{"sessionId":"s1","seq":7,"type":"history_compacted","before":900,"after":300}`)
	u.wantScreen("context compacted: 900 → 300 characters")
	u.wantScreen("ctx ~1.0k/32k (3%)") // estimated from the characters until the next usage
	u.pushRaw(`{"sessionId":"s1","turnId":"t1","seq":8,"type":"usage","inputTokens":5,"outputTokens":7,"contextTokens":1200,"contextWindow":32768}`)
	u.wantScreen("ctx 1.2k/32k (3%)")
	u.b.answers["session/compact"] = map[string]any{"sessionId": "s1", "compacted": false, "before": 18, "after": 18}
	u.typeText("/compact")
	u.press("enter")
	u.wantScreen("not compacted: the summary was not smaller than the context (18 characters)")
	u.b.answers["session/compact"] = map[string]any{"sessionId": "s1", "compacted": false, "cancelled": true, "before": 18, "after": 18}
	u.typeText("/compact")
	u.press("enter")
	u.wantScreen("compaction cancelled; the context is unchanged")

	u.m.upload = &uploadState{name: "data.csv", bar: u.m.progressBar()}
	u.send(uploadMsg{done: 1 << 20, total: 4 << 20})
	u.wantScreen("uploading data.csv")
	u.wantScreen("1048576/4194304 bytes")
	u.send(uploadMsg{end: true, err: &client.Error{Code: client.CodeInvalidParams, Message: "file too large"}})
	u.wantScreen("uploading data.csv: file too large")
	if u.m.upload != nil || len(u.m.attached) != 0 {
		t.Fatal("a failed upload stays")
	}

	u.typeText("/new")
	u.press("enter")
	u.wantCall(`session/new {"agentAlias":"default","keep_siblings":true}`)
	if u.m.sid != "s-new" || strings.Contains(u.screen(), "context compacted") {
		t.Fatalf("after /new, session %s:\n%s", u.m.sid, u.screen())
	}
	u.push(client.Update{SessionID: "s1", TurnID: "old", Type: client.AgentMessageChunk, Text: "from the old session"})
	if strings.Contains(u.screen(), "from the old session") {
		t.Fatal("an update of the session left behind is shown")
	}
}

func TestElicitationFreeTextAnswer(t *testing.T) {
	u := newUI(t, 80, 24)
	reply := make(chan client.ElicitationResult, 1)
	u.send(elicitMsg{e: client.Elicitation{Message: "Your name?", RequestedSchema: jsontext.Value(`{"type":"object","properties":{"answer":{"type":"string"}}}`)}, reply: reply})
	u.wantScreen("Your name?")
	u.typeText("Ada")
	u.press("enter")
	select {
	case r := <-reply:
		if r.Action != "accept" || r.Content["answer"] != "Ada" {
			t.Fatalf("answer %+v", r)
		}
	default:
		t.Fatalf("no answer:\n%s", u.screen())
	}
}

func TestANewFileDiffAndAFailedTool(t *testing.T) {
	u := newUI(t, 80, 24)
	u.push(client.Update{TurnID: "t1", Type: client.ToolCall, ToolCallID: "c1", Name: "write_file", RawInput: jsontext.Value(`{"path":"n.txt","content":"x"}`)})
	u.pushRaw(`{"sessionId":"s1","turnId":"t1","seq":3,"type":"tool_result","toolCallId":"c1","name":"write_file","rawOutput":"wrote","isError":false,"diff":{"path":"/ws/n.txt","newText":"one\ntwo\n"}}`)
	u.push(client.Update{TurnID: "t1", Type: client.ToolCall, ToolCallID: "c2", Name: "read_file", RawInput: jsontext.Value(`{"path":"missing"}`)},
		client.Update{TurnID: "t1", Type: client.ToolResult, ToolCallID: "c2", Name: "read_file", RawOutput: "no such file", IsError: true})
	u.wantScreen("created /ws/n.txt")
	u.wantScreen("+ one")
	u.wantScreen("✗ read_file missing")
	u.wantScreen("no such file")
}

func TestHistoryFileKeepsMultiLineInputs(t *testing.T) {
	path := t.TempDir() + "/history"
	saveHistory(path, []string{"one", "two\nlines", `a \n typed`, "three"})
	got := loadHistory(path)
	if strings.Join(got, "|") != "one|two\nlines|a \\n typed|three" {
		t.Fatalf("history read back as %q", got)
	}
	if loadHistory(t.TempDir()+"/none") != nil {
		t.Fatal("a missing file gave a history")
	}
}

func TestTypingBeforeTheConnectionKeepsTheText(t *testing.T) {
	m := New(Options{NoColor: true})
	m.after = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	u := &ui{t: t, m: m, b: newFake()}
	u.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	u.wantScreen("○ connecting…")
	u.typeText("early")
	u.press("enter")
	if m.input.Value() != "early" || !strings.Contains(m.hint, "not connected") {
		t.Fatalf("input %q, hint %q", m.input.Value(), m.hint)
	}
	u.send(connectedMsg{err: errors.New("dial unix /x: connection refused")})
	u.wantScreen("could not connect: dial unix /x: connection refused")
	u.wantScreen("● disconnected")
}

func TestArgumentSummaryPutsThePathFirst(t *testing.T) {
	for raw, want := range map[string]string{
		`{"content":"x","path":"a.txt"}`:                  "path=a.txt content=x",
		`{"command":"ls -l"}`:                             "ls -l",
		`{"timeout_secs":5,"command":"a"}`:                "command=a timeout_secs=5",
		`not json`:                                        "not json",
		`{"entries":[{"content":"a"},{"content":"b"}]}`:   "2 entries",
		`{"choices":["red","green"],"question":"Which?"}`: `question=Which? choices=["red","green"]`,
	} {
		if got := argsSummary(jsontext.Value(raw)); got != want {
			t.Errorf("argsSummary(%s) = %q, want %q", raw, got, want)
		}
	}
}

// A session the UI opened and left unused is deleted as it is left (by /new, or as
// the UI quits); one with a prompt, or with rows another client made, stays.
func TestAnEmptySessionTheUIOpenedIsDeletedWhenLeft(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.answers["session/messages"] = map[string]any{"sessionId": "s1", "total": 0, "messages": []any{}}
	u.b.answers["session/delete"] = map[string]any{"deleted": true}
	u.typeText("/new")
	u.press("enter")
	u.wantCall(`session/messages {"limit":1,"sessionId":"s1"}`)
	u.wantCall(`session/delete {"sessionId":"s1"}`)
	if u.m.sid != "s-new" {
		t.Fatalf("after /new, session %s", u.m.sid)
	}
	// Used: it stays as the UI quits.
	u.typeText("hello")
	u.press("enter")
	u.wantCall(`session/prompt {"prompt":"hello","sessionId":"s-new"}`)
	u.m.Discard(context.Background())
	if u.b.called(`session/delete {"sessionId":"s-new"}`) {
		t.Fatal("a session with a prompt was deleted")
	}

	// Not used here, but another client's turn gave it rows: it stays.
	v := newUI(t, 80, 24)
	v.b.answers["session/messages"] = map[string]any{"sessionId": "s1", "total": 2, "messages": []any{}}
	v.b.answers["session/delete"] = map[string]any{"deleted": true}
	v.m.Discard(context.Background())
	v.wantCall(`session/messages {"limit":1,"sessionId":"s1"}`)
	if v.b.called("session/delete") {
		t.Fatal("a session with rows was deleted")
	}
	// Unused and empty: deleted as the UI quits.
	w := newUI(t, 80, 24)
	w.b.answers["session/messages"] = map[string]any{"sessionId": "s1", "total": 0, "messages": []any{}}
	w.b.answers["session/delete"] = map[string]any{"deleted": true}
	w.m.Discard(context.Background())
	w.wantCall(`session/delete {"sessionId":"s1"}`)
}
