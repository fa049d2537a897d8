package provider

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

const testKey = "sk-test-0123456789abcdef"

// oaRequest is what an OpenAI-compatible server receives, for asserting.
type oaRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
	Messages            []struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  jsontext.Value `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func decodeOA(t *testing.T, r *http.Request) oaRequest {
	t.Helper()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Error(err)
	}
	var req oaRequest
	if err := json.Unmarshal(body, &req, json.RejectUnknownMembers(false)); err != nil {
		t.Errorf("request body %s: %v", body, err)
	}
	return req
}

func newTestOpenAI(t *testing.T, baseURL, key string) Provider {
	t.Helper()
	p, err := New(Config{Name: "oa", Kind: "openai", BaseURL: baseURL, Model: "default-model", APIKey: key,
		HTTPClient: testClient(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// chunk is one chat.completion.chunk carrying delta for choice 0.
func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, fr)
}

func toolDelta(index int, id, name, args string) string {
	head := ""
	if id != "" {
		head = fmt.Sprintf(`"id":%q,"type":"function",`, id)
	}
	fn := fmt.Sprintf(`"arguments":%q`, args)
	if name != "" {
		fn = fmt.Sprintf(`"name":%q,`, name) + fn
	}
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,%s"function":{%s}}]}`, index, head, fn), "")
}

const usageChunk = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":31,"completion_tokens":7,"total_tokens":38}}`

func TestOpenAIStreamsTextAndThoughtsAndSendsTheRequest(t *testing.T) {
	var got oaRequest
	var auth, path string
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		got, auth, path = decodeOA(t, r), r.Header.Get("Authorization"), r.URL.Path
		s := newSSE(w)
		s.data(chunk(`{"role":"assistant","content":""}`, ""))
		s.data(chunk(`{"reasoning_content":"thinking..."}`, ""))
		s.data(chunk(`{"content":"Hel"}`, ""))
		s.data(chunk(`{"content":"lo!"}`, ""))
		s.data(chunk(`{}`, "stop"))
		s.data(usageChunk)
		s.data("[DONE]")
	})
	p := newTestOpenAI(t, srv.URL+"/v1", testKey)
	req := Request{
		Model:  "gpt-test",
		System: "be brief",
		Messages: []Message{
			user("list files"),
			{Role: RoleAssistant, Text: "let me look", ToolCalls: []ToolCall{
				{ID: "tc_t_1", ProviderID: "call_a", Name: "list_dir", Arguments: jsontext.Value(`{"path":"."}`)},
				{ID: "tc_t_2", ProviderID: "call_b", Name: "read_file", Arguments: jsontext.Value(`{"path":"x"}`)},
			}},
			{Role: RoleTool, ToolCallID: "tc_t_1", Name: "list_dir", Text: "x"},
			{Role: RoleTool, ToolCallID: "tc_t_2", Name: "read_file", Text: "no such file", IsError: true},
		},
		Tools: []ToolSpec{{Name: "list_dir", Description: "lists a directory",
			Parameters: jsontext.Value(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
	}
	var rec recorder
	res, err := p.Stream(context.Background(), req, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello!" || rec.text() != "Hello!" {
		t.Errorf("Text = %q, deltas %q", res.Text, rec.text())
	}
	if d := diff([]string{"thinking..."}, rec.thoughts()); d != "" {
		t.Error(d)
	}
	if res.Usage != (Usage{InputTokens: 31, OutputTokens: 7}) {
		t.Errorf("Usage = %+v", res.Usage)
	}
	if len(res.ToolCalls) != 0 {
		t.Errorf("ToolCalls = %v", res.ToolCalls)
	}

	if path != "/v1/chat/completions" {
		t.Errorf("path = %q", path)
	}
	if auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q", auth)
	}
	if got.Model != "gpt-test" || !got.Stream || got.StreamOptions == nil || !got.StreamOptions.IncludeUsage {
		t.Errorf("model %q stream %v stream_options %+v", got.Model, got.Stream, got.StreamOptions)
	}
	type msg struct{ role, content, toolCallID, calls string }
	var msgs []msg
	for _, m := range got.Messages {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+" "+c.Type+" "+c.Function.Name+" "+c.Function.Arguments)
		}
		msgs = append(msgs, msg{m.Role, m.Content, m.ToolCallID, strings.Join(calls, "; ")})
	}
	want := []msg{
		{"system", "be brief", "", ""},
		{"user", "list files", "", ""},
		{"assistant", "let me look", "", `call_a function list_dir {"path":"."}; call_b function read_file {"path":"x"}`},
		{"tool", "x", "call_a", ""},
		{"tool", "no such file", "call_b", ""},
	}
	if d := diff(want, msgs); d != "" {
		t.Errorf("messages: %s", d)
	}
	if len(got.Tools) != 1 || got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "list_dir" ||
		got.Tools[0].Function.Description != "lists a directory" ||
		!strings.Contains(string(got.Tools[0].Function.Parameters), `"required":["path"]`) {
		t.Errorf("tools = %+v", got.Tools)
	}
}

func TestOpenAIUsesTheEntrysModelAndNoKeyMeansNoAuthorization(t *testing.T) {
	var got oaRequest
	var auth []string
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		got, auth = decodeOA(t, r), r.Header.Values("Authorization")
		s := newSSE(w)
		s.data(chunk(`{"content":"ok"}`, "stop"))
		s.data("[DONE]")
	})
	p := newTestOpenAI(t, srv.URL, "")
	res, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}, MaxTokens: 99}, func(Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "ok" || res.Usage != (Usage{}) {
		t.Errorf("res = %+v", res)
	}
	if got.Model != "default-model" || got.MaxTokens != 99 {
		t.Errorf("model %q max_tokens %d", got.Model, got.MaxTokens)
	}
	if len(auth) != 0 {
		t.Errorf("Authorization sent without a key: %q", auth)
	}
}

func TestOpenAIReassemblesArgumentsSplitOverManyChunks(t *testing.T) {
	args := `{"command":"ls -la /tmp","timeout_secs":30}`
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(toolDelta(0, "call_1", "shell", ""))
		for i := 0; i < len(args); i += 3 {
			s.data(toolDelta(0, "", "", args[i:min(i+3, len(args))]))
		}
		s.data(chunk(`{}`, "tool_calls"))
		s.data(usageChunk)
		s.data("[DONE]")
	})
	p := newTestOpenAI(t, srv.URL, testKey)
	res, err := p.Stream(context.Background(), Request{Messages: []Message{user("go")}}, func(Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{{ID: "call_1", ProviderID: "call_1", Name: "shell", Arguments: jsontext.Value(args)}}
	if d := diff(want, res.ToolCalls); d != "" {
		t.Error(d)
	}
	if res.Text != "" {
		t.Errorf("Text = %q", res.Text)
	}
}

func TestOpenAIReassemblesParallelCallsInterleavedByIndex(t *testing.T) {
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(chunk(`{"content":"two calls"}`, ""))
		s.data(toolDelta(0, "call_a", "read_file", `{"pa`))
		s.data(toolDelta(1, "call_b", "list_dir", ``))
		s.data(toolDelta(1, "", "", `{"path":`))
		s.data(toolDelta(0, "", "", `th":"a.txt"}`))
		s.data(toolDelta(1, "", "", `"src"}`))
		s.data(chunk(`{}`, "tool_calls"))
		s.data("[DONE]")
	})
	p := newTestOpenAI(t, srv.URL, testKey)
	res, err := p.Stream(context.Background(), Request{Messages: []Message{user("go")}}, func(Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "call_a", ProviderID: "call_a", Name: "read_file", Arguments: jsontext.Value(`{"path":"a.txt"}`)},
		{ID: "call_b", ProviderID: "call_b", Name: "list_dir", Arguments: jsontext.Value(`{"path":"src"}`)},
	}
	if d := diff(want, res.ToolCalls); d != "" {
		t.Error(d)
	}
	if res.Text != "two calls" {
		t.Errorf("Text = %q", res.Text)
	}
}

func TestOpenAIRefusesArgumentsThatAreNotAnObject(t *testing.T) {
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(toolDelta(0, "call_a", "shell", `{"command": "ls`))
		s.data(chunk(`{}`, "length"))
		s.data("[DONE]")
	})
	p := newTestOpenAI(t, srv.URL, testKey)
	_, err := p.Stream(context.Background(), Request{Messages: []Message{user("go")}}, func(Delta) {})
	pe := asError(t, err)
	if !strings.Contains(pe.Message, `"shell"`) || !strings.Contains(pe.Message, "token limit") {
		t.Errorf("Message = %q", pe.Message)
	}
}

// httpFailures are the error statuses both kinds must describe alike.
var httpFailures = []struct {
	name   string
	status int
	header map[string]string
	body   string
	want   []string
}{
	{
		name:   "rate limited with Retry-After",
		status: 429,
		header: map[string]string{"Retry-After": "7"},
		body:   `{"error":{"message":"Rate limit reached for requests","type":"rate_limit_error"}}`,
		want:   []string{"rate limited", "7s", "Rate limit reached"},
	},
	{
		name:   "server failure",
		status: 500,
		body:   `{"error":{"message":"internal","type":"api_error"}}`,
		want:   []string{"the provider failed (HTTP 500)", "try again"},
	},
	{
		name:   "overloaded",
		status: 529,
		body:   `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		want:   []string{"the provider failed (HTTP 529)", "Overloaded"},
	},
	{
		name:   "key refused, body quoting the key",
		status: 401,
		body:   `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error"}}`,
		want:   []string{"the API key was refused (HTTP 401: Incorrect API key provided: [redacted]); check providers.NAME.api_key"},
	},
	{
		name:   "key refused, body quoting part of the key",
		status: 401,
		body:   `{"error":{"message":"Incorrect API key provided: ` + testKey[:7] + `***********cdef. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error"}}`,
		want:   []string{"the API key was refused (HTTP 401: Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.); check"},
	},
	{
		name:   "forbidden",
		status: 403,
		body:   `{"error":{"message":"Project proj_x does not have access to model the-model"}}`,
		want:   []string{"the API key was refused (HTTP 403: Project proj_x does not have access to model the-model)"},
	},
	{
		name:   "not found",
		status: 404,
		body:   `{"error":{"message":"The model 'nope' does not exist"}}`,
		want:   []string{"HTTP 404", `"the-model"`, "base_url", "does not exist"},
	},
	{
		name:   "a proxy's error page",
		status: 502,
		body:   "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>",
		want:   []string{"the provider failed (HTTP 502): 502 Bad Gateway; try again"},
	},
	{
		name:   "bad request, Mistral style",
		status: 400,
		body:   `{"object":"error","message":"Tool call id was tc_1_1 but must be a-z, A-Z, 0-9, with a length of 9","type":"invalid_request_message_error","param":null,"code":null}`,
		want:   []string{"(HTTP 400): Tool call id was tc_1_1 but must be a-z, A-Z, 0-9, with a length of 9"},
	},
	{
		name:   "bad request, Ollama style",
		status: 400,
		body:   `{"error":"invalid tool schema"}`,
		want:   []string{"HTTP 400", "invalid tool schema"},
	},
}

func TestOpenAIDescribesHTTPFailures(t *testing.T) {
	for _, tt := range httpFailures {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			p := newTestOpenAI(t, srv.URL, testKey)
			_, err := p.Stream(context.Background(), Request{Model: "the-model", Messages: []Message{user("hi")}}, func(Delta) {})
			pe := asError(t, err)
			t.Log(pe)
			if pe.Status != tt.status || pe.Provider != "oa" {
				t.Errorf("Status %d Provider %q", pe.Status, pe.Provider)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "NAME", "oa"); !strings.Contains(pe.Error(), w) {
					t.Errorf("%q lacks %q", pe.Error(), w)
				}
			}
			if strings.Contains(pe.Error(), testKey) || strings.Contains(fmt.Sprint(pe.Err), testKey) ||
				strings.Contains(fmt.Sprint(pe.Err), testKey[len(testKey)-4:]) {
				t.Errorf("the key leaks: %q / %v", pe.Error(), pe.Err)
			}
		})
	}
}

func TestOpenAINamesTheKeyVariableWhenTheKeyIsRefused(t *testing.T) {
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
	})
	p, err := New(Config{Name: "oa", Kind: "openai", BaseURL: srv.URL, Model: "m", APIKeyEnv: "OA_KEY",
		HTTPClient: testClient(t)}, func(string) string { return testKey })
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
	if pe := asError(t, err); !strings.Contains(pe.Message, "$OA_KEY") {
		t.Errorf("Message = %q", pe.Message)
	}
}

func TestOpenAIReportsAStreamCutMidway(t *testing.T) {
	for name, cut := range map[string]func(s sseWriter){
		"connection dropped": func(sseWriter) { panic(http.ErrAbortHandler) },
		"body ended cleanly": func(sseWriter) {},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				s := newSSE(w)
				s.data(chunk(`{"content":"partial "}`, ""))
				s.data(chunk(`{"content":"answer"}`, ""))
				cut(s)
			})
			p := newTestOpenAI(t, srv.URL, testKey)
			var rec recorder
			_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, rec.emit)
			t.Log(err)
			if pe := asError(t, err); !strings.Contains(pe.Message, "the stream ended early") {
				t.Errorf("Message = %q", pe.Message)
			}
			if rec.text() != "partial answer" {
				t.Errorf("streamed %q before the cut", rec.text())
			}
		})
	}
}

func TestOpenAIReportsMalformedAndErrorEvents(t *testing.T) {
	for _, tt := range []struct{ event, want string }{
		{`{"choices":[{"index":0,"delta":{"content":`, "malformed event"},
		{`{"error":{"message":"model crashed","type":"server_error"}}`, "mid-stream (server_error): model crashed"},
		{`{"error":{"code":502,"message":"Provider returned error"}}`, "mid-stream (code 502): Provider returned error"}, // OpenRouter
	} {
		srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(chunk(`{"content":"a"}`, ""))
			s.data(tt.event)
		})
		p := newTestOpenAI(t, srv.URL, testKey)
		_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
		t.Log(err)
		if pe := asError(t, err); !strings.Contains(pe.Message, tt.want) {
			t.Errorf("Message = %q, want %q", pe.Message, tt.want)
		}
	}
}

func TestOpenAIAbandonsTheRequestWhenCancelled(t *testing.T) {
	serverSaw := make(chan struct{})
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(chunk(`{"content":"first"}`, ""))
		<-r.Context().Done() // hold the stream open until the client goes
		close(serverSaw)
	})
	p := newTestOpenAI(t, srv.URL, testKey)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	_, err := p.Stream(ctx, Request{Messages: []Message{user("hi")}}, func(Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v", d)
	}
	select {
	case <-serverSaw:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request end")
	}
}

func TestOpenAITimesOutAsConfigured(t *testing.T) {
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		newSSE(w).data(chunk(`{"content":"slow"}`, ""))
		<-r.Context().Done()
	})
	p, err := New(Config{Name: "oa", Kind: "openai", BaseURL: srv.URL, Model: "m", Timeout: 100 * time.Millisecond,
		HTTPClient: testClient(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
	t.Log(err)
	pe := asError(t, err)
	if !strings.Contains(pe.Message, "within 100ms") || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
}

func TestOpenAINamesTheBaseURLWhenTheConnectionIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	p := newTestOpenAI(t, url, testKey)
	_, err = p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
	t.Log(err)
	pe := asError(t, err)
	if !strings.Contains(pe.Message, url) || !strings.Contains(pe.Message, "connection refused") {
		t.Errorf("Message = %q", pe.Message)
	}
}

func TestOpenAIRefusesAWebPage(t *testing.T) {
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html>welcome</html>")
	})
	p := newTestOpenAI(t, srv.URL, testKey)
	_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
	if pe := asError(t, err); !strings.Contains(pe.Message, "web page") {
		t.Errorf("Message = %q", pe.Message)
	}
}
