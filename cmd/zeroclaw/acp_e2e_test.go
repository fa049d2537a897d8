//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// `zeroclaw acp` driven as an editor drives it: the Go ACP SDK's client side on the
// process's stdin and stdout (docs/protocol.md, "ACP", every row of its table).

// acpConfig has agents for the rows that need them: full autonomy, a one-step
// limit, and a provider that fails at once.
const acpConfig = `
[agents.full]
provider = "echo"
autonomy = "full"

[agents.one]
provider = "echo"
autonomy = "full"
max_steps = 1

[providers.down]
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
model = "none"

[agents.broken]
provider = "down"
`

// editor is one `zeroclaw acp` process and the SDK connection to it.
type editor struct {
	t      *testing.T
	cmd    *exec.Cmd
	conn   *acpsdk.ClientSideConnection
	stdin  io.WriteCloser
	stderr *syncBuffer
	exited chan struct{}
	err    error

	mu       sync.Mutex
	updates  []map[string]any // every session/update's update, in order
	changed  chan struct{}    // closed and replaced when an update arrives (nil until waited on)
	onAsk    func(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)
	onElicit func(ctx context.Context, p acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error)
	asked    chan acpsdk.RequestPermissionRequest
	elicited chan acpsdk.UnstableCreateElicitationRequest
}

// startEditor starts `zeroclaw acp args...` with HOME=h plus env.
func startEditor(t *testing.T, h string, env []string, args ...string) *editor {
	t.Helper()
	cmd := command(h, append([]string{"acp"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	e := &editor{t: t, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{}),
		asked: make(chan acpsdk.RequestPermissionRequest, 16), elicited: make(chan acpsdk.UnstableCreateElicitationRequest, 16)}
	cmd.Stderr = e.stderr
	var err error
	if e.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		e.err = cmd.Wait()
		close(e.exited)
	}()
	t.Cleanup(func() {
		e.stdin.Close()
		select {
		case <-e.exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-e.exited
		}
		if t.Failed() {
			t.Logf("zeroclaw acp stderr:\n%s", e.stderr.String())
		}
	})
	e.conn = acpsdk.NewClientSideConnection((*editorClient)(e), e.stdin, stdout)
	return e
}

func (e *editor) initialize(caps acpsdk.ClientCapabilities) acpsdk.InitializeResponse {
	e.t.Helper()
	res, err := e.conn.Initialize(ctxFor(e.t), acpsdk.InitializeRequest{ProtocolVersion: 1, ClientCapabilities: caps,
		ClientInfo: &acpsdk.Implementation{Name: "go-test-editor", Version: "1"}})
	if err != nil {
		e.t.Fatalf("initialize: %v\n%s", err, e.stderr.String())
	}
	return res
}

func (e *editor) newSession(cwd string) string {
	e.t.Helper()
	res, err := e.conn.NewSession(ctxFor(e.t), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		e.t.Fatalf("session/new: %v", err)
	}
	return string(res.SessionId)
}

func (e *editor) prompt(sid string, blocks ...acpsdk.ContentBlock) (acpsdk.PromptResponse, error) {
	return e.conn.Prompt(ctxFor(e.t), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: blocks})
}

func (e *editor) mustPrompt(sid, text string) string {
	e.t.Helper()
	res, err := e.prompt(sid, acpsdk.TextBlock(text))
	if err != nil {
		e.t.Fatalf("prompt %q: %v", text, err)
	}
	return string(res.StopReason)
}

// take returns the updates received so far and forgets them.
func (e *editor) take() []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.updates
	e.updates = nil
	return out
}

// turnOnly drops the updates that come around a turn's own stream: the usage after
// each model call, and the commands and the mode a session tells once it is opened.
func turnOnly(us []map[string]any) []map[string]any {
	var out []map[string]any
	for _, u := range us {
		if k := u["sessionUpdate"]; k != "usage_update" && k != "available_commands_update" && k != "current_mode_update" {
			out = append(out, u)
		}
	}
	return out
}

// waitUpdate waits for an update of kind sessionUpdate.
func (e *editor) waitUpdate(kind string) map[string]any {
	e.t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		e.mu.Lock()
		for _, u := range e.updates {
			if u["sessionUpdate"] == kind {
				e.mu.Unlock()
				return u
			}
		}
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			e.t.Fatalf("no %s update within 30s", kind)
		}
	}
}

// closeAndWait ends stdin and waits for the process to exit.
func (e *editor) closeAndWait() error {
	e.t.Helper()
	e.stdin.Close()
	select {
	case <-e.exited:
		return e.err
	case <-time.After(20 * time.Second):
		e.t.Fatal("zeroclaw acp did not exit within 20s of the end of its input")
		return nil
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// editorClient is the editor's side of the SDK: it records updates and answers
// permission requests and questions as the test says. fs and terminal are never used
// by the bridge: they fail the test.
type editorClient editor

func (c *editorClient) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	b, err := json.Marshal(n.Update)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	m["_sessionId"] = string(n.SessionId)
	c.mu.Lock()
	c.updates = append(c.updates, m)
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
	c.mu.Unlock()
	return nil
}

func (c *editorClient) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.asked <- p
	c.mu.Lock()
	f := c.onAsk
	c.mu.Unlock()
	if f == nil {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected("allow_once")}, nil
	}
	return f(ctx, p)
}

func (c *editorClient) UnstableCreateElicitation(ctx context.Context, p acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error) {
	c.elicited <- p
	c.mu.Lock()
	f := c.onElicit
	c.mu.Unlock()
	if f == nil {
		return acpsdk.NewUnstableCreateElicitationResponseDecline(), nil
	}
	return f(ctx, p)
}

func (c *editorClient) unexpected(what string) error {
	c.t.Errorf("the bridge used the editor's %s", what)
	return errors.New("not supported")
}

func (c *editorClient) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, c.unexpected("fs/read_text_file")
}
func (c *editorClient) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, c.unexpected("fs/write_text_file")
}
func (c *editorClient) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, c.unexpected("terminal/create")
}
func (c *editorClient) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, c.unexpected("terminal/kill")
}
func (c *editorClient) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, c.unexpected("terminal/output")
}
func (c *editorClient) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, c.unexpected("terminal/release")
}
func (c *editorClient) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, c.unexpected("terminal/wait_for_exit")
}

// acpHome is a home with acpConfig and a project directory (the editor's cwd).
func acpHome(t *testing.T) (h, project string) {
	h = home(t)
	writeConfig(t, h, acpConfig)
	project = filepath.Join(h, "proj")
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	return h, project
}

func codeOfACP(err error) int {
	var re *acpsdk.RequestError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

func textOf(updates []map[string]any, kind string) string {
	var b strings.Builder
	for _, u := range updates {
		if u["sessionUpdate"] == kind {
			b.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

func TestACPAutoStartsHandshakesStreamsAndExitsZeroOnEOF(t *testing.T) {
	h, project := acpHome(t)
	e := startEditor(t, h, nil)
	res, err := e.conn.Initialize(ctxFor(t), acpsdk.InitializeRequest{ProtocolVersion: 7})
	if err != nil {
		t.Fatal(err)
	}
	caps := res.AgentCapabilities
	if res.ProtocolVersion != 1 || !caps.LoadSession || !caps.PromptCapabilities.Image || !caps.PromptCapabilities.EmbeddedContext ||
		caps.PromptCapabilities.Audio || len(res.AuthMethods) != 0 || res.AgentInfo == nil || res.AgentInfo.Name != "zeroclaw" ||
		res.AgentInfo.Version != "0.8.6" {
		t.Fatalf("initialize = %+v", res)
	}
	sc := caps.SessionCapabilities
	if sc.List == nil || sc.Resume == nil || sc.Close == nil || sc.Delete == nil {
		t.Errorf("sessionCapabilities = %+v, want list, resume, close and delete", sc)
	}
	socket := filepath.Join(h, ".zeroclaw", "data", "daemon.sock")
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("no auto-started daemon: %v", err)
	}

	sid := e.newSession(project)
	if stop := e.mustPrompt(sid, "/think pondering\n/tool list_dir {\"path\":\".\"}\nhello there"); stop != "end_turn" {
		t.Fatalf("stopReason %s", stop)
	}
	updates := turnOnly(e.take())
	var kinds []string
	for _, u := range updates {
		kinds = append(kinds, u["sessionUpdate"].(string))
		if u["_sessionId"] != sid {
			t.Errorf("update of another session: %v", u)
		}
	}
	if want := "agent_thought_chunk tool_call tool_call_update"; !strings.HasPrefix(strings.Join(kinds, " "), want) {
		t.Errorf("updates %v, want %s then message chunks (and no echo of the prompt)", kinds, want)
	}
	call, result := updates[1], updates[2]
	if call["kind"] != "search" || call["status"] != "pending" || call["title"] != "list_dir: ." ||
		call["rawInput"].(map[string]any)["path"] != "." || !strings.HasPrefix(call["toolCallId"].(string), "tc_") {
		t.Errorf("tool_call = %v", call)
	}
	if result["toolCallId"] != call["toolCallId"] || result["status"] != "completed" || result["rawOutput"] == nil {
		t.Errorf("tool_call_update = %v", result)
	}
	if got := textOf(updates, "agent_thought_chunk"); got != "pondering" {
		t.Errorf("thought %q", got)
	}
	if got := textOf(updates, "agent_message_chunk"); !strings.HasPrefix(got, "echo: hello there\nlist_dir -> ") {
		t.Errorf("reply %q", got)
	}

	if err := e.closeAndWait(); err != nil {
		t.Fatalf("exit after EOF: %v\n%s", err, e.stderr.String())
	}
	if strings.Contains(e.stderr.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", e.stderr.String())
	}
	// The ephemeral daemon leaves about a second after its last client.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(socket); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the auto-started daemon is still serving 20s after the editor left")
		}
		time.Sleep(20 * time.Millisecond) // polling another process (its socket), with a deadline
	}
}

func TestACPPromptContentBlocks(t *testing.T) {
	h, project := acpHome(t)
	e := startEditor(t, h, nil, "--agent", "full")
	e.initialize(acpsdk.ClientCapabilities{})
	sid := e.newSession(project)
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really"))
	big := make([]byte, 5<<20) // above one file/attach: goes through the chunked upload
	for i := range big {
		big[i] = byte(i)
	}
	_, err := e.prompt(sid,
		acpsdk.TextBlock("look at these"),
		acpsdk.ResourceLinkBlock("main.go", "file:///src/app/main.go"),
		acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{Uri: "file:///src/app/notes.txt", Text: "inline notes"}}),
		acpsdk.ImageBlock(png, "image/png"),
		acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{BlobResourceContents: &acpsdk.BlobResourceContents{Uri: "file:///src/app/data.bin", Blob: base64.StdEncoding.EncodeToString(big)}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	reply := textOf(e.take(), "agent_message_chunk")
	for _, want := range []string{"echo: look at these\n", "\n/src/app/main.go\n", "\n/src/app/notes.txt\ninline notes\n", "[IMAGE:", "[Document: data.bin]"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply %q lacks %q", reply, want)
		}
	}
	uploads, _ := filepath.Glob(filepath.Join(project, "uploads", "*"))
	sizes := map[int64]bool{}
	for _, u := range uploads {
		if fi, err := os.Stat(u); err == nil {
			sizes[fi.Size()] = true
		}
	}
	if len(uploads) != 2 || !sizes[int64(len(big))] {
		t.Errorf("uploads %v (sizes %v), want the image and the %d-byte blob", uploads, sizes, len(big))
	}

	_, err = e.prompt(sid, acpsdk.TextBlock("hear this"), acpsdk.AudioBlock("AAAA", "audio/wav"))
	if codeOfACP(err) != -32602 {
		t.Errorf("audio: %v, want -32602", err)
	}
}

func TestACPStopReasonsAndErrors(t *testing.T) {
	h, project := acpHome(t)
	one := startEditor(t, h, nil, "--agent", "one")
	one.initialize(acpsdk.ClientCapabilities{})
	sid := one.newSession(project)
	if stop := one.mustPrompt(sid, "/tool list_dir {\"path\":\".\"}\nagain"); stop != "max_turn_requests" {
		t.Errorf("max_steps: stopReason %s, want max_turn_requests", stop)
	}

	broken := startEditor(t, h, nil, "--agent", "broken")
	broken.initialize(acpsdk.ClientCapabilities{})
	bsid := broken.newSession(project)
	_, err := broken.prompt(bsid, acpsdk.TextBlock("hi"))
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(re.Message, "127.0.0.1:1") {
		t.Errorf("provider error: %v, want -32603 with the turn's text", err)
	}

	_, err = broken.prompt("no-such-session", acpsdk.TextBlock("hi"))
	if codeOfACP(err) != -32002 {
		t.Errorf("unknown session: %v, want -32002", err)
	}
	_, err = broken.conn.NewSession(ctxFor(t), acpsdk.NewSessionRequest{McpServers: []acpsdk.McpServer{}})
	if codeOfACP(err) != -32602 {
		t.Errorf("session/new without cwd: %v, want -32602", err)
	}
}

func TestACPPermissionRequests(t *testing.T) {
	h, project := acpHome(t)
	e := startEditor(t, h, nil)
	e.initialize(acpsdk.ClientCapabilities{})
	sid := e.newSession(project)
	choose := func(option string) {
		e.mu.Lock()
		e.onAsk = func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
			if option == "cancelled" {
				return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
			}
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(option))}, nil
		}
		e.mu.Unlock()
	}
	write := func(name string) string {
		return fmt.Sprintf("/tool write_file {\"path\":%q,\"content\":\"x\"}\nwrite", name)
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(project, name))
		return err == nil
	}

	choose("reject_once")
	e.mustPrompt(sid, write("rejected.txt"))
	p := <-e.asked
	var ids []string
	for _, o := range p.Options {
		ids = append(ids, string(o.OptionId)+"/"+string(o.Kind))
	}
	if strings.Join(ids, " ") != "allow_once/allow_once allow_always/allow_always reject_once/reject_once" {
		t.Errorf("options %v", ids)
	}
	if p.ToolCall.Kind == nil || *p.ToolCall.Kind != "edit" || p.ToolCall.Status == nil || *p.ToolCall.Status != "pending" {
		t.Errorf("toolCall %+v", p.ToolCall)
	}
	updates := e.take()
	if exists("rejected.txt") {
		t.Error("a rejected write happened")
	}
	for _, u := range updates {
		if u["sessionUpdate"] == "tool_call_update" && u["status"] != "failed" {
			t.Errorf("rejected call's update %v, want failed", u)
		}
	}

	choose("allow_once")
	e.mustPrompt(sid, write("once.txt"))
	<-e.asked
	if !exists("once.txt") {
		t.Error("allow_once: the write did not happen")
	}
	choose("allow_always")
	e.mustPrompt(sid, write("always1.txt"))
	<-e.asked
	e.mustPrompt(sid, write("always2.txt"))
	select {
	case p := <-e.asked:
		t.Errorf("asked again after allow_always: %+v", p)
	default:
	}
	if !exists("always1.txt") || !exists("always2.txt") {
		t.Error("allow_always: the writes did not happen")
	}

	// "cancelled" sends no decision: the request stays open on the daemon until
	// another client answers it; a request answered elsewhere is withdrawn from the
	// editor with $/cancel_request (the SDK ends the handler's context).
	sid = e.newSession(project) // write_file is always allowed in the first one now
	other := dial(t, filepath.Join(h, ".zeroclaw", "data", "daemon.sock"))
	other.initialize()
	other.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))
	withdrawn := make(chan struct{})
	e.mu.Lock()
	cancelledOnce := false
	e.onAsk = func(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		e.mu.Lock()
		first := !cancelledOnce
		cancelledOnce = true
		e.mu.Unlock()
		if first {
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
		}
		<-ctx.Done()
		close(withdrawn)
		return acpsdk.RequestPermissionResponse{}, ctx.Err()
	}
	e.mu.Unlock()
	for i, name := range []string{"elsewhere1.txt", "elsewhere2.txt"} {
		done := make(chan error, 1)
		go func() { _, err := e.prompt(sid, acpsdk.TextBlock(write(name))); done <- err }()
		<-e.asked
		req := waitUpdate(other, "approval_request")
		if i == 0 {
			// The editor answered "cancelled": the turn still waits.
			select {
			case err := <-done:
				t.Fatalf("the turn ended after a cancelled permission outcome: %v", err)
			default:
			}
		}
		other.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, req["requestId"]))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !exists(name) {
			t.Errorf("%s: the write approved elsewhere did not happen", name)
		}
	}
	select {
	case <-withdrawn:
	case <-time.After(30 * time.Second):
		t.Fatal("the editor's permission request was not withdrawn after another client answered")
	}
}

func TestACPElicitationOnlyWhenDeclared(t *testing.T) {
	h, project := acpHome(t)
	ask := "/tool ask_user {\"question\":\"Which colour?\",\"choices\":[\"red\",\"blue\"]}\nask"

	plain := startEditor(t, h, nil, "--agent", "full")
	plain.initialize(acpsdk.ClientCapabilities{})
	sid := plain.newSession(project)
	plain.mustPrompt(sid, ask)
	if reply := textOf(plain.take(), "agent_message_chunk"); strings.Contains(reply, "blue") {
		t.Errorf("reply %q: an editor without form elicitation was asked", reply)
	}
	select {
	case p := <-plain.elicited:
		t.Errorf("elicitation/create sent to an editor that did not declare it: %+v", p)
	default:
	}

	capable := startEditor(t, h, nil, "--agent", "full")
	capable.mu.Lock()
	capable.onElicit = func(context.Context, acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error) {
		return acpsdk.UnstableCreateElicitationResponse{Accept: &acpsdk.UnstableCreateElicitationAccept{Action: "accept", Content: map[string]any{"answer": "blue"}}}, nil
	}
	capable.mu.Unlock()
	capable.initialize(acpsdk.ClientCapabilities{Elicitation: &acpsdk.ElicitationCapabilities{Form: &acpsdk.ElicitationFormCapabilities{}}})
	sid = capable.newSession(project)
	capable.mustPrompt(sid, ask)
	if reply := textOf(capable.take(), "agent_message_chunk"); !strings.Contains(reply, "ask_user -> blue") {
		t.Errorf("reply %q, want the editor's answer", reply)
	}
	if p := <-capable.elicited; p.Form == nil || p.Form.Message != "Which colour?" {
		t.Errorf("elicitation %+v", p)
	}
}

func TestACPCancelAlwaysAnswersCancelled(t *testing.T) {
	h, project := acpHome(t)
	e := startEditor(t, h, nil, "--agent", "full")
	e.initialize(acpsdk.ClientCapabilities{})
	sid := e.newSession(project)

	// A running shell: session/cancel stops it.
	done := make(chan acpsdk.PromptResponse, 1)
	go func() {
		res, err := e.prompt(sid, acpsdk.TextBlock("/tool shell {\"command\":\"sleep 30\"}\nwait"))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	e.waitUpdate("tool_call")
	if err := e.conn.Cancel(ctxFor(t), acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.StopReason != "cancelled" {
			t.Errorf("stopReason %s after session/cancel", res.StopReason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled shell turn did not answer within 10s")
	}
	e.take()

	// session/close cancels the running turn first.
	go func() {
		res, err := e.prompt(sid, acpsdk.TextBlock("/tool shell {\"command\":\"sleep 30\"}\nwait"))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	e.waitUpdate("tool_call")
	if _, err := e.conn.CloseSession(ctxFor(t), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.StopReason != "cancelled" {
		t.Errorf("prompt during session/close: %s, want cancelled", res.StopReason)
	}
}

func TestACPLoadReplaysHistoryAfterADaemonRestart(t *testing.T) {
	h, project := acpHome(t)
	d := startDaemon(t, h, nil)
	// A session made by another client, with a tool call.
	c := dial(t, d.socket)
	c.initialize()
	sid := c.must("session/new", fmt.Sprintf(`{"agentAlias":"full","cwd":%q}`, project))["sessionId"].(string)
	c.must("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"/tool list_dir {\"path\":\".\"}\nfirst question\nline two"}`, sid))
	c.conn.Close()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(20 * time.Second); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	startDaemon(t, h, nil)

	e := startEditor(t, h, nil, "--agent", "full")
	e.initialize(acpsdk.ClientCapabilities{})
	list, err := e.conn.ListSessions(ctxFor(t), acpsdk.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || string(list.Sessions[0].SessionId) != sid || list.Sessions[0].Cwd != project ||
		list.Sessions[0].Title == nil || *list.Sessions[0].Title != "/tool list_dir {\"path\":\".\"}" {
		t.Fatalf("session/list = %+v", list)
	}
	if _, err := e.conn.LoadSession(ctxFor(t), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: project, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	updates := turnOnly(e.take())
	var kinds []string
	for _, u := range updates {
		kinds = append(kinds, u["sessionUpdate"].(string))
	}
	if strings.Join(kinds, " ") != "user_message_chunk tool_call tool_call_update agent_message_chunk" {
		t.Fatalf("replayed %v", kinds)
	}
	if got := textOf(updates, "user_message_chunk"); !strings.Contains(got, "first question\nline two") {
		t.Errorf("user row %q", got)
	}
	if updates[1]["toolCallId"] != updates[2]["toolCallId"] || updates[1]["kind"] != "search" || updates[2]["status"] != "completed" {
		t.Errorf("tool rows %v %v", updates[1], updates[2])
	}
	// The replayed call is located again, as it was live.
	if locs, _ := updates[1]["locations"].([]any); len(locs) != 1 || locs[0].(map[string]any)["path"] != project {
		t.Errorf("the replayed list_dir call's locations: %v, want [{path: %s}]", updates[1]["locations"], project)
	}
	if got := textOf(updates, "agent_message_chunk"); !strings.HasPrefix(got, "echo: first question\nline two") {
		t.Errorf("assistant row %q", got)
	}
	// The loaded session goes on.
	if stop := e.mustPrompt(sid, "and then?"); stop != "end_turn" {
		t.Errorf("prompt after load: %s", stop)
	}
	if _, err := e.conn.ResumeSession(ctxFor(t), acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: project}); err != nil {
		t.Errorf("session/resume: %v", err)
	}
	if _, err := e.conn.UnstableDeleteSession(ctxFor(t), acpsdk.UnstableDeleteSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatalf("session/delete: %v", err)
	}
	_, err = e.conn.LoadSession(ctxFor(t), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: project, McpServers: []acpsdk.McpServer{}})
	if codeOfACP(err) != -32002 {
		t.Errorf("load after delete: %v, want -32002", err)
	}
	_, err = e.conn.ResumeSession(ctxFor(t), acpsdk.ResumeSessionRequest{SessionId: "never-made", Cwd: project})
	if codeOfACP(err) != -32002 {
		t.Errorf("resume of an unknown session: %v, want -32002", err)
	}
}

var startedPID = regexp.MustCompile(`started an ephemeral daemon.*pid=(\d+)`)

func TestACPDaemonGoneMidTurnThenStartsAgain(t *testing.T) {
	h, project := acpHome(t)
	e := startEditor(t, h, nil, "--agent", "full")
	e.initialize(acpsdk.ClientCapabilities{})
	sid := e.newSession(project)
	m := waitLog(t, e, startedPID, 1)[0]
	pid, _ := strconv.Atoi(m[1])
	done := make(chan error, 1)
	go func() {
		_, err := e.prompt(sid, acpsdk.TextBlock("/tool shell {\"command\":\"sleep 30\"}\nwait"))
		done <- err
	}()
	e.waitUpdate("tool_call")
	syscall.Kill(pid, syscall.SIGKILL)
	var re *acpsdk.RequestError
	if err := <-done; !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(re.Message, "went away") {
		t.Fatalf("prompt when the daemon died: %v, want -32603 saying the daemon went away", err)
	}
	// The next request starts a daemon again; the session comes back from storage.
	if res, err := e.prompt(sid, acpsdk.TextBlock("are you back?")); err != nil || res.StopReason != "end_turn" {
		daemonLog, _ := os.ReadFile(filepath.Join(h, ".zeroclaw", "data", "ephemeral-daemon.log"))
		t.Fatalf("prompt after the daemon died: %v %v\ndaemon log:\n%s", res.StopReason, err, daemonLog)
	}
	waitLog(t, e, startedPID, 2)
	if reply := textOf(e.take(), "agent_message_chunk"); !strings.Contains(reply, "echo: are you back?") {
		t.Errorf("reply %q", reply)
	}
}

// waitLog waits until the editor's stderr (copied by a goroutine of exec) holds n
// matches of re, and returns them.
func waitLog(t *testing.T, e *editor, re *regexp.Regexp, n int) [][]string {
	t.Helper()
	return waitLogWithin(t, e, re, n, 20*time.Second)
}

// waitLogWithin is waitLog with its own deadline.
func waitLogWithin(t *testing.T, e *editor, re *regexp.Regexp, n int, d time.Duration) [][]string {
	t.Helper()
	log, ok := e.stderr.await(func(log string) bool { return len(re.FindAllStringSubmatch(log, -1)) >= n }, e.exited, d)
	if !ok {
		t.Fatalf("want %d lines matching %s in the log:\n%s", n, re, log)
	}
	return re.FindAllStringSubmatch(log, -1)
}

// rawEditor writes ACP lines by hand, for what an SDK never sends.
type rawEditor struct {
	t     *testing.T
	stdin io.WriteCloser
	out   *bufio.Reader
	e     *editor
}

func startRaw(t *testing.T, h string, args ...string) *rawEditor {
	cmd := command(h, append([]string{"acp"}, args...)...)
	e := &editor{t: t, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = e.stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	e.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { e.err = cmd.Wait(); close(e.exited) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-e.exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-e.exited
		}
	})
	return &rawEditor{t: t, stdin: stdin, out: bufio.NewReader(stdout), e: e}
}

func (r *rawEditor) send(line string) {
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// until reads frames until the answer with id (its JSON text), returning it and
// the frames before it.
func (r *rawEditor) until(id string) (map[string]any, []map[string]any) {
	r.t.Helper()
	var before []map[string]any
	for {
		line, err := r.out.ReadBytes('\n')
		if err != nil {
			r.t.Fatalf("reading: %v\n%s", err, r.e.stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			r.t.Fatalf("stdout carries a non-JSON line %q", line)
		}
		if _, isReq := m["method"]; !isReq {
			if b, _ := json.Marshal(m["id"]); string(b) == id {
				return m, before
			}
		}
		before = append(before, m)
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	return e["code"].(float64)
}

func TestACPRawFramesBadJSONUnknownMethodsAndCancelRequest(t *testing.T) {
	h, project := acpHome(t)
	r := startRaw(t, h, "--agent", "full")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"_meta":{"zed":true}}}`)
	if m, _ := r.until("1"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":0}}`)
	if m, _ := r.until("2"); errCode(m) != -32602 {
		t.Errorf("protocolVersion 0: %v", m)
	}
	r.send(`{not json`)
	if m, _ := r.until("null"); errCode(m) != -32700 {
		t.Errorf("bad JSON: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"session/set_model","params":{}}`)
	if m, _ := r.until("3"); errCode(m) != -32601 {
		t.Errorf("unknown method: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"some/notification","params":{}}`) // ignored
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"new","method":"session/new","params":{"cwd":%q,"mcpServers":[{"name":"x","command":"/bin/true","args":[],"env":[]}]}}`, project))
	m, _ := r.until(`"new"`)
	sid, _ := m["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", m)
	}
	// $/cancel_request for a running prompt cancels its turn.
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/tool shell {\"command\":\"sleep 30\"}"}]}}`, sid))
	for {
		line, err := r.out.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(line), `"sessionUpdate":"tool_call"`) {
			break
		}
	}
	r.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}`)
	m, _ = r.until("7")
	if res, _ := m["result"].(map[string]any); res["stopReason"] != "cancelled" {
		t.Errorf("prompt after $/cancel_request: %v", m)
	}
	// A cancel right behind a quick prompt: whichever wins the race on the daemon
	// (often the turn's end), the answer is cancelled.
	for i := range 10 {
		id := strconv.Itoa(100 + i)
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"quick"}]}}`+"\n"+
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, id, sid, sid))
		m, _ := r.until(id)
		if res, _ := m["result"].(map[string]any); res["stopReason"] != "cancelled" {
			t.Errorf("race %d: %v, want cancelled", i, m)
		}
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":200,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"still here"}]}}`, sid))
	if m, _ := r.until("200"); m["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Errorf("after the races: %v", m)
	}
	r.stdin.Close()
	select {
	case <-r.e.exited:
		if r.e.err != nil {
			t.Errorf("exit: %v", r.e.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after EOF")
	}
}

func TestACPEditorThatFallsBehindStillGetsTheWholeTurn(t *testing.T) {
	h, project := acpHome(t)
	// The daemon keeps enough updates to replay the whole turn (docs/protocol.md,
	// "session/attach").
	writeConfig(t, h, acpConfig+"\n[rpc]\nreplay_events = 100000\n")
	r := startRaw(t, h, "--agent", "full")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.until("1")
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, project))
	m, _ := r.until("2")
	sid := m["result"].(map[string]any)["sessionId"].(string)

	// 24,000 updates while the editor reads nothing: the bridge's writes back up and
	// its queue of daemon updates (QueueFrames, 20,000) overflows. The bridge must
	// replay what was dropped, on a new connection, before it answers.
	const calls = 4000
	prompt := strings.Repeat("/tool list_dir {\"path\":\".\"}\n", calls) + "many"
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, sid, prompt))
	// Read nothing until the bridge's queue has overflowed, which its log says at
	// once. (The daemon sends at its reader's pace, docs/protocol.md,
	// "A daemon that runs for months": a finished transcript
	// does not mean the bridge has read the whole turn, and an editor that read then
	// could drain the queue before it overflowed.)
	waitLogWithin(t, r.e, regexp.MustCompile(`update queue is full`), 1, 3*time.Minute)
	res, before := r.until("3")
	if res["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", res)
	}
	waitLog(t, r.e, regexp.MustCompile(`fell behind`), 1)
	seen := map[string]int{}
	var reply strings.Builder
	for _, f := range before {
		p, _ := f["params"].(map[string]any)
		u, _ := p["update"].(map[string]any)
		switch u["sessionUpdate"] {
		case "tool_call":
			seen[u["toolCallId"].(string)]++
		case "tool_call_update":
			seen[u["toolCallId"].(string)] += 10
		case "agent_message_chunk":
			reply.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	for id, n := range seen {
		if n != 11 {
			t.Fatalf("tool call %s: forwarded %d calls and %d results, want 1 and 1", id, n%10, n/10)
		}
	}
	if len(seen) != calls || strings.Count(reply.String(), "list_dir -> ") != calls || !strings.HasPrefix(reply.String(), "echo: many") {
		t.Errorf("the editor got %d tool calls and %d result lines, want %d of each", len(seen), strings.Count(reply.String(), "list_dir -> "), calls)
	}
}
