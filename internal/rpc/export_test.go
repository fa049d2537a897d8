package rpc

import (
	"encoding/json/v2"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

const toolPrompt = "/tool list_dir {\"path\":\".\"}\nhello"

// exportLines parses a JSON-lines export.
func exportLines(t *testing.T, content string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("export line %d is not JSON: %v: %q", i, err, line)
		}
		out = append(out, m)
	}
	return out
}

func TestExportShowsTheTranscriptWithToolCallsTitleAndTimesInBothFormats(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	p.must("session/prompt", prompt(sid, toolPrompt))
	p.must("session/set", fmt.Sprintf(`{"sessionId":%q,"title":"Listing the workspace"}`, sid))

	md := p.must("session/export", fmt.Sprintf(`{"sessionId":%q,"format":"markdown"}`, sid))["content"].(string)
	today := time.Now().UTC().Format("2006-01-02")
	for _, want := range []string{
		"# Listing the workspace\n", "- session: `" + sid + "`", "- agent: `full`",
		"\n## User · " + today, "/tool list_dir", "\n### Tool call `list_dir` (tc_", "```json\n{\"path\":\".\"}\n```",
		"\n### Tool result `list_dir` (tc_", "\n## Assistant · " + today, "echo: hello",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown export lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "### Tool call") > strings.Index(md, "### Tool result") ||
		strings.Index(md, "### Tool result") > strings.Index(md, "## Assistant") {
		t.Errorf("the markdown export is out of order:\n%s", md)
	}

	lines := exportLines(t, p.must("session/export", fmt.Sprintf(`{"sessionId":%q,"format":"jsonl"}`, sid))["content"].(string))
	head := lines[0]
	if head["type"] != "session" || head["sessionId"] != sid || head["title"] != "Listing the workspace" ||
		head["agentAlias"] != "full" || head["createdAt"] == nil {
		t.Errorf("the jsonl header: %v", head)
	}
	var got []string
	for _, l := range lines[1:] {
		if l["type"] != "message" || l["time"] == nil || l["turnId"] == nil {
			t.Errorf("a jsonl row: %v", l)
		}
		if strings.HasPrefix(fmt.Sprint(l["role"]), "tool_") && (l["toolCallId"] == nil || l["name"] != "list_dir") {
			t.Errorf("a jsonl tool row: %v", l)
		}
		got = append(got, fmt.Sprint(l["index"], ":", l["role"]))
	}
	if s := strings.Join(got, " "); s != "0:user 1:tool_call 2:tool_result 3:assistant" {
		t.Errorf("the jsonl rows: %s", s)
	}
	// Without a format, markdown.
	if c := p.must("session/export", fmt.Sprintf(`{"sessionId":%q}`, sid))["content"]; c != md {
		t.Errorf("the default format is not markdown")
	}
}

func TestExportRefusesABadFormatAndATranscriptOverEightMiB(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	_, err := p.call("session/export", fmt.Sprintf(`{"sessionId":%q,"format":"pdf"}`, sid))
	if e := wantCode(t, err, -32602); e.Data["param"] != "format" {
		t.Errorf("a bad format: %v", e)
	}
	_, err = p.call("session/export", `{"sessionId":"no-such-session","format":"jsonl"}`)
	wantCode(t, err, -32000)
	// A 4.5 MiB prompt, echoed: the transcript is over 9 MiB.
	p.must("session/prompt", prompt(sid, strings.Repeat("z", 4608<<10)))
	for _, format := range []string{"markdown", "jsonl"} {
		_, err := p.call("session/export", fmt.Sprintf(`{"sessionId":%q,"format":%q}`, sid, format))
		e := wantCode(t, err, -32602)
		if n, _ := e.Data["bytes"].(float64); n < 9<<20 {
			t.Errorf("%s: the refusal's data.bytes = %v, want the export's size (over 9 MiB)", format, e.Data["bytes"])
		}
	}
}

// An export while turns are being written is a consistent snapshot: every turn in
// it is whole (a turn's rows reach the transcript in one transaction).
func TestExportOfASessionBeingWrittenIsConsistent(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p, q := h.peer(t, ""), h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 30 {
			if _, err := p.call("session/prompt", prompt(sid, toolPrompt)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	exports, last := 0, 0
	for running := true; running; exports++ {
		select {
		case <-done:
			running = false
		default:
		}
		lines := exportLines(t, q.must("session/export", fmt.Sprintf(`{"sessionId":%q,"format":"jsonl"}`, sid))["content"].(string))
		turns := map[string][]string{}
		var order []string
		for _, l := range lines[1:] {
			id := l["turnId"].(string)
			if turns[id] == nil {
				order = append(order, id)
			}
			turns[id] = append(turns[id], l["role"].(string))
		}
		for _, id := range order {
			if s := strings.Join(turns[id], " "); s != "user tool_call tool_result assistant" {
				t.Fatalf("export %d shows turn %s as %q", exports, id, s)
			}
		}
		if len(order) < last {
			t.Fatalf("export %d shows %d turns, an earlier one %d", exports, len(order), last)
		}
		last = len(order)
	}
	if last != 30 {
		t.Errorf("the last export shows %d turns, want 30", last)
	}
	t.Logf("%d exports while 30 turns ran", exports)
}
