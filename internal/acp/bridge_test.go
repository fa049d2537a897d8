package acp

import (
	"encoding/json/v2"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNativeErrorsBecomeACPCodes(t *testing.T) {
	for _, tt := range []struct {
		in   error
		code int64
	}{
		{&client.Error{Code: client.CodeSessionNotFound, Message: "session not found: x"}, -32002},
		{&client.Error{Code: client.CodeSessionBusy, Message: "session busy: 32 prompts are already waiting"}, -32603},
		{&client.Error{Code: client.CodeSessionLimit, Message: "session limit reached"}, -32603},
		{&client.Error{Code: client.CodeConnectionLimit, Message: "connection limit"}, -32603},
		{&client.Error{Code: client.CodeInvalidParams, Message: "invalid params: cwd must be an absolute path"}, -32602},
		{&client.Error{Code: client.CodeForbidden, Message: "forbidden"}, -32012},
		{fmt.Errorf("calling: %w", client.ErrClosed), -32603},
		{errors.New("anything else"), -32603},
	} {
		var e *jsonrpc.Error
		if !errors.As(acpError(tt.in), &e) || e.Code != tt.code {
			t.Errorf("%v -> %v, want code %d", tt.in, e, tt.code)
			continue
		}
		var ce *client.Error
		if errors.As(tt.in, &ce) && e.Message != ce.Message {
			t.Errorf("%v: message %q, want the daemon's", tt.in, e.Message)
		}
	}
}

func TestToolKindsAndTitles(t *testing.T) {
	for tool, kind := range map[string]string{"read_file": "read", "list_dir": "search", "write_file": "edit", "shell": "execute", "ask_user": "other",
		"edit_file": "edit", "search": "search", "glob": "search", "update_plan": "other"} {
		if got := kindOf(tool); got != kind {
			t.Errorf("kindOf(%s) = %s, want %s", tool, got, kind)
		}
	}
	if got := titleOf("shell", []byte(`{"command":"go test ./..."}`)); got != "shell: go test ./..." {
		t.Errorf("title %q", got)
	}
	if got := titleOf("search", []byte(`{"pattern":"func main"}`)); got != "search: func main" {
		t.Errorf("title %q", got)
	}
	if got := titleOf("mystery", []byte(`{"n":1}`)); got != "mystery" {
		t.Errorf("title %q", got)
	}
}

func TestURIsAndMIMETypes(t *testing.T) {
	for uri, want := range map[string]string{
		"file:///src/app/main.go":     "/src/app/main.go",
		"file:///tmp/with%20space.md": "/tmp/with space.md",
		"zed://selection/3":           "zed://selection/3",
	} {
		if got := pathOf(uri); got != want {
			t.Errorf("pathOf(%s) = %s, want %s", uri, got, want)
		}
	}
	for mime, want := range map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/svg+xml": "svg", "application/octet-stream": "octetstream", "": "bin"} {
		if got := extOf(mime); got != want {
			t.Errorf("extOf(%q) = %s, want %s", mime, got, want)
		}
	}
	if got := fileName("file:///a/b/photo.webp"); got != "photo.webp" {
		t.Errorf("fileName = %q", got)
	}
}

func TestToolboxShapes(t *testing.T) {
	old := "a\n"
	for _, tt := range []struct {
		name string
		v    any
		want string
	}{
		{"tool_call with locations", newToolCall("c1", "edit_file", []byte(`{"path":"f"}`), []client.Location{{Path: "/w/f", Line: 3}, {Path: "/w/g"}}),
			`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"edit_file: f","kind":"edit","status":"pending","rawInput":{"path":"f"},"locations":[{"path":"/w/f","line":3},{"path":"/w/g"}]}`},
		{"tool_call of a file tool outside", newToolCall("c2", "read_file", []byte(`{"path":"../x"}`), []client.Location{}),
			`{"sessionUpdate":"tool_call","toolCallId":"c2","title":"read_file: ../x","kind":"read","status":"pending","rawInput":{"path":"../x"},"locations":[]}`},
		{"tool_call of another tool", newToolCall("c3", "shell", nil, nil),
			`{"sessionUpdate":"tool_call","toolCallId":"c3","title":"shell","kind":"execute","status":"pending","rawInput":{}}`},
		{"result with a diff", newToolResult("c1", "edited", false, &client.Diff{Path: "/w/f", OldText: &old, NewText: "b\n"}),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"diff","path":"/w/f","oldText":"a\n","newText":"b\n"},{"type":"content","content":{"type":"text","text":"edited"}}],"rawOutput":"edited"}`},
		{"result with the diff of a new file", newToolResult("c1", "wrote", false, &client.Diff{Path: "/w/n", NewText: ""}),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"diff","path":"/w/n","newText":""},{"type":"content","content":{"type":"text","text":"wrote"}}],"rawOutput":"wrote"}`},
		{"failed result", newToolResult("c1", "no", true, nil),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"no"}}],"rawOutput":"no"}`},
		{"plan", newPlan([]client.PlanEntry{{Content: "a", Status: "completed", Priority: "high"}, {Content: "b", Status: "pending"}}),
			`{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"completed"},{"content":"b","priority":"medium","status":"pending"}]}`},
		{"empty plan", newPlan([]client.PlanEntry{}), `{"sessionUpdate":"plan","entries":[]}`},
		{"plan of null entries", newPlan(nil), `{"sessionUpdate":"plan","entries":[]}`},
	} {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s:\n got %s %v\nwant %s", tt.name, b, err, tt.want)
		}
	}
}
