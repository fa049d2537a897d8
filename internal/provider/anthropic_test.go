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
	"sync"
	"testing"
	"time"
)

// anRequest is what a Messages API server receives, for asserting.
type anRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string         `json:"type"`
			Text      string         `json:"text"`
			ID        string         `json:"id"`
			Name      string         `json:"name"`
			Input     jsontext.Value `json:"input"`
			ToolUseID string         `json:"tool_use_id"`
			IsError   *bool          `json:"is_error"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema jsontext.Value `json:"input_schema"`
	} `json:"tools"`
}

func decodeAN(t *testing.T, r *http.Request) anRequest {
	t.Helper()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Error(err)
	}
	var req anRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("request body %s: %v", body, err)
	}
	return req
}

func newTestAnthropic(t *testing.T, baseURL string) Provider {
	t.Helper()
	p, err := New(Config{Name: "an", Kind: "anthropic", BaseURL: baseURL, Model: "default-model", APIKey: testKey,
		HTTPClient: testClient(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	anStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}`
	anStop  = `{"type":"message_stop"}`
)

func anBlockStart(index int, block string) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, index, block)
}

func anDelta(index int, delta string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, index, delta)
}

func anBlockStop(index int) string {
	return fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index)
}

func anMessageDelta(reason string, output int) string {
	return fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, reason, output)
}

func anJSONDelta(index int, partial string) string {
	return anDelta(index, fmt.Sprintf(`{"type":"input_json_delta","partial_json":%q}`, partial))
}

func TestAnthropicStreamsTextAndThinkingAndSendsTheRequest(t *testing.T) {
	var got anRequest
	var header http.Header
	var path string
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		got, header, path = decodeAN(t, r), r.Header.Clone(), r.URL.Path
		s := newSSE(w)
		s.event("message_start", anStart)
		s.event("content_block_start", anBlockStart(0, `{"type":"thinking","thinking":"","signature":""}`))
		s.event("ping", `{"type":"ping"}`)
		s.event("content_block_delta", anDelta(0, `{"type":"thinking_delta","thinking":"Let me "}`))
		s.event("content_block_delta", anDelta(0, `{"type":"thinking_delta","thinking":"think."}`))
		s.event("content_block_delta", anDelta(0, `{"type":"signature_delta","signature":"c2ln"}`))
		s.event("content_block_stop", anBlockStop(0))
		s.event("content_block_start", anBlockStart(1, `{"type":"text","text":""}`))
		s.event("content_block_delta", anDelta(1, `{"type":"text_delta","text":"Hello"}`))
		s.event("content_block_delta", anDelta(1, `{"type":"text_delta","text":", world"}`))
		s.event("content_block_stop", anBlockStop(1))
		s.event("message_delta", anMessageDelta("end_turn", 12))
		s.event("message_stop", anStop)
	})
	p := newTestAnthropic(t, srv.URL)
	req := Request{
		Model:  "claude-test",
		System: "be brief",
		Messages: []Message{
			user("look around"),
			{Role: RoleAssistant, Text: "sure", ToolCalls: []ToolCall{
				{ID: "tc_t_1", ProviderID: "toolu_a", Name: "list_dir", Arguments: jsontext.Value(`{"path":"."}`)},
				{ID: "tc_t_2", ProviderID: "toolu_b", Name: "read_file", Arguments: jsontext.Value(`{"path":"x"}`)},
			}},
			{Role: RoleTool, ToolCallID: "tc_t_1", Name: "list_dir", Text: "x"},
			{Role: RoleTool, ToolCallID: "tc_t_2", Name: "read_file", Text: "no such file", IsError: true},
		},
		Tools: []ToolSpec{{Name: "list_dir", Description: "lists a directory",
			Parameters: jsontext.Value(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}},
	}
	var rec recorder
	res, err := p.Stream(context.Background(), req, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello, world" || rec.text() != res.Text {
		t.Errorf("Text = %q, deltas %q", res.Text, rec.text())
	}
	if d := diff([]string{"Let me ", "think."}, rec.thoughts()); d != "" {
		t.Error(d)
	}
	if res.Usage != (Usage{InputTokens: 30, OutputTokens: 12, CachedInputTokens: 5}) {
		t.Errorf("Usage = %+v", res.Usage)
	}

	if path != "/v1/messages" {
		t.Errorf("path = %q", path)
	}
	if header.Get("X-Api-Key") != testKey || header.Get("Authorization") != "" {
		t.Errorf("x-api-key %q, Authorization %q", header.Get("X-Api-Key"), header.Get("Authorization"))
	}
	if header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	if got.Model != "claude-test" || got.MaxTokens != DefaultMaxTokens || !got.Stream {
		t.Errorf("model %q max_tokens %d stream %v", got.Model, got.MaxTokens, got.Stream)
	}
	if len(got.System) != 1 || got.System[0].Text != "be brief" {
		t.Errorf("system = %+v", got.System)
	}
	var blocks []string
	for _, m := range got.Messages {
		for _, c := range m.Content {
			s := m.Role + " " + c.Type
			switch c.Type {
			case "text":
				s += " " + c.Text
			case "tool_use":
				s += " " + c.ID + " " + c.Name + " " + string(c.Input)
			case "tool_result":
				s += fmt.Sprintf(" %s %v %+v", c.ToolUseID, c.IsError != nil && *c.IsError, c.Content)
			}
			blocks = append(blocks, s)
		}
		blocks = append(blocks, "|")
	}
	want := []string{
		"user text look around", "|",
		"assistant text sure", `assistant tool_use toolu_a list_dir {"path":"."}`, `assistant tool_use toolu_b read_file {"path":"x"}`, "|",
		"user tool_result toolu_a false [{Type:text Text:x}]", "user tool_result toolu_b true [{Type:text Text:no such file}]", "|",
	}
	if d := diff(want, blocks); d != "" {
		t.Errorf("messages: %s", d)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "list_dir" || got.Tools[0].Description != "lists a directory" {
		t.Fatalf("tools = %+v", got.Tools)
	}
	var schema map[string]any
	if err := json.Unmarshal(got.Tools[0].InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema["type"] != "object" || schema["properties"] == nil || schema["additionalProperties"] != false ||
		fmt.Sprint(schema["required"]) != "[path]" {
		t.Errorf("input_schema = %s", got.Tools[0].InputSchema)
	}
}

func TestAnthropicReassemblesToolInputSplitOverDeltas(t *testing.T) {
	var got anRequest
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = decodeAN(t, r)
		s := newSSE(w)
		s.event("message_start", anStart)
		s.event("content_block_start", anBlockStart(0, `{"type":"text","text":""}`))
		s.event("content_block_delta", anDelta(0, `{"type":"text_delta","text":"Two calls."}`))
		s.event("content_block_stop", anBlockStop(0))
		s.event("content_block_start", anBlockStart(1, `{"type":"tool_use","id":"toolu_1","name":"shell","input":{}}`))
		for _, part := range []string{`{"comm`, `and": "ls`, ` -la"`, `, "timeout_secs": 5}`} {
			s.event("content_block_delta", anJSONDelta(1, part))
		}
		s.event("content_block_stop", anBlockStop(1))
		s.event("content_block_start", anBlockStart(2, `{"type":"tool_use","id":"toolu_2","name":"list_dir","input":{}}`))
		s.event("content_block_delta", anJSONDelta(2, `{"path"`))
		s.event("content_block_delta", anJSONDelta(2, `: "src"}`))
		s.event("content_block_stop", anBlockStop(2))
		s.event("content_block_start", anBlockStart(3, `{"type":"tool_use","id":"toolu_3","name":"ask_user","input":{}}`))
		s.event("content_block_stop", anBlockStop(3))
		s.event("message_delta", anMessageDelta("tool_use", 40))
		s.event("message_stop", anStop)
	})
	p := newTestAnthropic(t, srv.URL)
	res, err := p.Stream(context.Background(), Request{Messages: []Message{user("go")}, MaxTokens: 1000}, func(Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "toolu_1", ProviderID: "toolu_1", Name: "shell", Arguments: jsontext.Value(`{"command": "ls -la", "timeout_secs": 5}`)},
		{ID: "toolu_2", ProviderID: "toolu_2", Name: "list_dir", Arguments: jsontext.Value(`{"path": "src"}`)},
		{ID: "toolu_3", ProviderID: "toolu_3", Name: "ask_user", Arguments: jsontext.Value(`{}`)},
	}
	if d := diff(want, res.ToolCalls); d != "" {
		t.Error(d)
	}
	if res.Text != "Two calls." || res.Usage != (Usage{InputTokens: 30, OutputTokens: 40, CachedInputTokens: 5}) {
		t.Errorf("res = %+v", res)
	}
	if got.Model != "default-model" || got.MaxTokens != 1000 {
		t.Errorf("model %q max_tokens %d", got.Model, got.MaxTokens)
	}
}

func TestAnthropicDescribesHTTPFailures(t *testing.T) {
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
			p := newTestAnthropic(t, srv.URL)
			_, err := p.Stream(context.Background(), Request{Model: "the-model", Messages: []Message{user("hi")}}, func(Delta) {})
			pe := asError(t, err)
			t.Log(pe)
			if pe.Status != tt.status || pe.Provider != "an" {
				t.Errorf("Status %d Provider %q", pe.Status, pe.Provider)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "NAME", "an"); !strings.Contains(pe.Error(), w) {
					t.Errorf("%q lacks %q", pe.Error(), w)
				}
			}
			if strings.Contains(pe.Error(), testKey) || strings.Contains(fmt.Sprint(pe.Err), testKey) {
				t.Errorf("the key leaks: %q / %v", pe.Error(), pe.Err)
			}
		})
	}
}

func TestAnthropicReportsAStreamCutMidway(t *testing.T) {
	for name, cut := range map[string]func(){
		"connection dropped": func() { panic(http.ErrAbortHandler) },
		"body ended cleanly": func() {},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				s := newSSE(w)
				s.event("message_start", anStart)
				s.event("content_block_start", anBlockStart(0, `{"type":"text","text":""}`))
				s.event("content_block_delta", anDelta(0, `{"type":"text_delta","text":"partial"}`))
				cut()
			})
			p := newTestAnthropic(t, srv.URL)
			var rec recorder
			_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, rec.emit)
			t.Log(err)
			if pe := asError(t, err); !strings.Contains(pe.Message, "the stream ended early") {
				t.Errorf("Message = %q", pe.Message)
			}
			if rec.text() != "partial" {
				t.Errorf("streamed %q before the cut", rec.text())
			}
		})
	}
}

func TestAnthropicReportsMalformedAndErrorEvents(t *testing.T) {
	for _, tt := range []struct{ name, data, want string }{
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`, "malformed event"},
		{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error: Overloaded"},
		{"content_block_delta", anJSONDelta(7, `{}`), "malformed event"},
	} {
		srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.event("message_start", anStart)
			s.event(tt.name, tt.data)
		})
		p := newTestAnthropic(t, srv.URL)
		_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
		t.Log(err)
		if pe := asError(t, err); !strings.Contains(pe.Message, tt.want) {
			t.Errorf("Message = %q, want %q", pe.Message, tt.want)
		}
	}
}

func TestAnthropicAbandonsTheRequestWhenCancelled(t *testing.T) {
	serverSaw := make(chan struct{})
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.event("message_start", anStart)
		s.event("content_block_start", anBlockStart(0, `{"type":"text","text":""}`))
		s.event("content_block_delta", anDelta(0, `{"type":"text_delta","text":"first"}`))
		<-r.Context().Done()
		close(serverSaw)
	})
	p := newTestAnthropic(t, srv.URL)
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

func TestAnthropicIgnoresTheEnvironment(t *testing.T) {
	stray := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request reached ANTHROPIC_BASE_URL: %s", r.URL)
		w.WriteHeader(500)
	})
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", stray.URL)
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: yes")
	t.Setenv("ANTHROPIC_PROFILE", "no-such-profile")

	var header http.Header
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		s := newSSE(w)
		s.event("message_start", anStart)
		s.event("message_delta", anMessageDelta("end_turn", 1))
		s.event("message_stop", anStop)
	})
	p := newTestAnthropic(t, srv.URL)
	if _, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {}); err != nil {
		t.Fatal(err)
	}
	if header.Get("X-Api-Key") != testKey || header.Get("Authorization") != "" || header.Get("X-From-Env") != "" {
		t.Errorf("headers = %v", header)
	}
}

func TestAnthropicDefaultsToThePublicEndpointNotTheEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	var host string
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		host = r.URL.Host
		return nil, errors.New("offline")
	})}
	p, err := New(Config{Name: "an", Kind: "anthropic", Model: "m", APIKey: testKey, HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
	if host != "api.anthropic.com" {
		t.Errorf("request went to %q (err %v)", host, err)
	}
	asError(t, err)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAnthropicTimesOutAsConfigured(t *testing.T) {
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		newSSE(w).event("message_start", anStart)
		<-r.Context().Done()
	})
	p, err := New(Config{Name: "an", Kind: "anthropic", BaseURL: srv.URL, Model: "m", APIKey: testKey,
		Timeout: 100 * time.Millisecond, HTTPClient: testClient(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
	t.Log(err)
	if pe := asError(t, err); !strings.Contains(pe.Message, "within 100ms") || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
}

func TestAnthropicNamesTheBaseURLWhenTheConnectionIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	p := newTestAnthropic(t, url)
	_, err = p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
	t.Log(err)
	if pe := asError(t, err); !strings.Contains(pe.Message, url) || !strings.Contains(pe.Message, "connection refused") {
		t.Errorf("Message = %q", pe.Message)
	}
}

func TestProvidersAreSafeForConcurrentUse(t *testing.T) {
	oa := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(chunk(`{"content":"ok"}`, "stop"))
		s.data("[DONE]")
	})
	an := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.event("message_start", anStart)
		s.event("content_block_start", anBlockStart(0, `{"type":"text","text":"ok"}`))
		s.event("message_stop", anStop)
	})
	providers := []Provider{Echo{}, newTestOpenAI(t, oa.URL, testKey), newTestAnthropic(t, an.URL)}
	var wg sync.WaitGroup
	for _, p := range providers {
		for range 8 {
			wg.Go(func() {
				var rec recorder
				res, err := p.Stream(context.Background(), Request{Messages: []Message{user("ok")}}, rec.emit)
				if err != nil || !strings.HasSuffix(res.Text, "ok") || rec.text() != res.Text {
					t.Errorf("%T: %+v %v", p, res, err)
				}
			})
		}
	}
	wg.Wait()
}
