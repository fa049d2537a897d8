package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeanthropic"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// docs/protocol.md, "Remote providers", against the real binary: the default agent
// runs on a fake OpenAI or Anthropic server, and a client on the daemon's socket sees
// what a user would.

// scripted is one fake server of either kind, driven by the same script.
type scripted struct {
	kind    string
	url     string
	request func(t testing.TB, n int) map[string]any
	count   func() int
	check   func(req map[string]any) error
	// lastUser is the text of the request's last user message.
	lastUser func(req map[string]any) string
}

// answer is a kind-neutral scripted answer.
type answer struct {
	text       []string
	call       string // a tool call of list_dir with these arguments
	status     int
	retryAfter string
	message    string
}

func fakeOf(t *testing.T, kind string, strict bool, script ...answer) scripted {
	t.Helper()
	if kind == "openai" {
		var as []fakeopenai.Answer
		for _, a := range script {
			fa := fakeopenai.Answer{Text: a.text, Status: a.status, RetryAfter: a.retryAfter, Message: a.message}
			if a.call != "" {
				fa.Calls = []fakeopenai.Call{{ID: "call_1", Name: "list_dir", Args: a.call}}
			}
			as = append(as, fa)
		}
		f := fakeopenai.New(t, as...)
		if strict {
			f.Strict()
		}
		return scripted{kind: kind, url: f.URL(), request: f.Request, count: f.Count, check: fakeopenai.Alternates,
			lastUser: func(req map[string]any) string {
				msgs := fakeopenai.Messages(req)
				s, _ := msgs[len(msgs)-1]["content"].(string)
				return s
			}}
	}
	var as []fakeanthropic.Answer
	for _, a := range script {
		fa := fakeanthropic.Answer{Text: a.text, Status: a.status, RetryAfter: a.retryAfter, Message: a.message}
		if a.status == 529 {
			fa.ErrorType = "overloaded_error"
		}
		if a.call != "" {
			fa.Calls = []fakeanthropic.Call{{ID: "toolu_1", Name: "list_dir", Input: []string{a.call[:len(a.call)/2], a.call[len(a.call)/2:]}}}
		}
		as = append(as, fa)
	}
	f := fakeanthropic.New(t, as...)
	if strict {
		f.Strict()
	}
	return scripted{kind: kind, url: f.URL(), request: f.Request, count: f.Count, check: fakeanthropic.Alternates,
		lastUser: func(req map[string]any) string {
			msgs := fakeanthropic.Messages(req)
			var texts []string
			for _, b := range fakeanthropic.Blocks(msgs[len(msgs)-1]) {
				if b["type"] == "text" {
					texts = append(texts, b["text"].(string))
				}
			}
			return strings.Join(texts, "|")
		}}
}

// onFake starts a daemon whose default agent runs on f; extra goes into its
// [providers.fake] entry.
func onFake(t *testing.T, f scripted, extra string) (*daemon, *rpcConn, string) {
	t.Helper()
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	conf := fmt.Sprintf("[providers.fake]\nkind = %q\nbase_url = %q\nmodel = \"m\"\napi_key = \"k\"\n%s\n"+
		"[agents.default]\nprovider = \"fake\"\nautonomy = \"full\"\n", f.kind, f.url, extra)
	if err := os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	r := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default"},"id":2}`)
	res, ok := r["result"].(map[string]any)
	if !ok {
		t.Fatalf("session/new: %v", r)
	}
	return d, c, res["sessionId"].(string)
}

// prompted sends a prompt with the given id and returns the agent_message_chunk
// texts of its turn and its result.
func prompted(t *testing.T, c *rpcConn, sid, prompt string, id int) ([]string, map[string]any) {
	t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":%q,"prompt":%q},"id":%d}`, sid, prompt, id))
	return answered(t, c, id)
}

// answered reads until the response with id, collecting the chunks on the way.
func answered(t *testing.T, c *rpcConn, id int) ([]string, map[string]any) {
	t.Helper()
	var chunks []string
	for {
		m := c.recv()
		if p, _ := m["params"].(map[string]any); m["method"] == "session/update" && p["type"] == "agent_message_chunk" {
			chunks = append(chunks, p["text"].(string))
			continue
		}
		if m["id"] == float64(id) {
			res, ok := m["result"].(map[string]any)
			if !ok {
				t.Fatalf("prompt %d: %v", id, m)
			}
			return chunks, res
		}
	}
}

var kinds = []string{"openai", "anthropic"}

func TestTextBeforeAToolCallIsInTheResult(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			f := fakeOf(t, kind, true,
				answer{text: []string{"Let me look."}, call: `{"path":"."}`},
				answer{text: []string{"Found ", "it."}})
			_, c, sid := onFake(t, f, "")
			chunks, res := prompted(t, c, sid, "where is it?", 3)
			want := "Let me look.\n\nFound it."
			if res["stopReason"] != "end_turn" || res["text"] != want {
				t.Fatalf("result %v, want end_turn with %q", res, want)
			}
			if got := strings.Join(chunks, ""); got != want || strings.Join(chunks, "|") != "Let me look.|\n\n|Found |it." {
				t.Errorf("chunks %q", chunks)
			}
			if err := f.check(f.request(t, 1)); err != nil {
				t.Errorf("the second model call: %v", err)
			}
		})
	}
}

func TestAStrictModelKeepsWorkingAfterAFailedTurn(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			// A strict server answers 400 to two user messages in a row and takes
			// no answer from the script for it: "fine" is answered only to a
			// context that alternates.
			f := fakeOf(t, kind, true,
				answer{status: 500, message: "internal trouble"},
				answer{text: []string{"fine"}})
			_, c, sid := onFake(t, f, "")
			if _, res := prompted(t, c, sid, "first", 3); res["stopReason"] != "error" || !strings.Contains(res["text"].(string), "internal trouble") {
				t.Fatalf("the failing turn: %v", res)
			}
			for i, p := range []string{"second", "third"} {
				if _, res := prompted(t, c, sid, p, 4+i); res["stopReason"] != "end_turn" || res["text"] != "fine" {
					t.Fatalf("prompt %q after the failed turn: %v", p, res)
				}
			}
			if n := f.count(); n != 3 {
				t.Errorf("%d requests, want 3 (none refused)", n)
			}
			if got := f.lastUser(f.request(t, 1)); got != "first\n\nsecond" {
				t.Errorf("the prompt after the failed turn was sent as %q", got)
			}
			third := f.request(t, 2)
			if err := f.check(third); err != nil || f.lastUser(third) != "third" {
				t.Errorf("the third request (%v): %v", f.lastUser(third), err)
			}
		})
	}
}

func TestARateLimitIsRetriedAfterRetryAfterWithinOneTurn(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			f := fakeOf(t, kind, false,
				answer{status: 429, retryAfter: "1", message: "slow down"},
				answer{text: []string{"hello ", "world"}})
			_, c, sid := onFake(t, f, "")
			chunks, res := prompted(t, c, sid, "hi", 3)
			if res["stopReason"] != "end_turn" || res["text"] != "hello world" {
				t.Fatalf("result %v", res)
			}
			if strings.Join(chunks, "|") != "hello |world" {
				t.Errorf("chunks %q, want each piece once", chunks)
			}
			if n := f.count(); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			// It was one turn: the next prompt is answered as the second of the session.
			if _, res := prompted(t, c, sid, "again", 4); res["stopReason"] != "end_turn" || f.lastUser(f.request(t, 2)) != "again" {
				t.Errorf("the next turn: %v", res)
			}
		})
	}
}

func TestAnOverloadedModelFailsNamingTheStatusAfterItsRetries(t *testing.T) {
	for _, kind := range kinds {
		for _, tt := range []struct {
			extra    string
			attempts int
		}{
			{"", 3}, // max_retries defaults to 2
			{"max_retries = 0", 1},
		} {
			t.Run(kind+"/"+tt.extra, func(t *testing.T) {
				f := fakeOf(t, kind, false, answer{status: 529, message: "Overloaded"})
				_, c, sid := onFake(t, f, tt.extra)
				_, res := prompted(t, c, sid, "hi", 3)
				text, _ := res["text"].(string)
				if res["stopReason"] != "error" || !strings.Contains(text, "529") || !strings.Contains(text, "Overloaded") {
					t.Fatalf("result %v, want an error naming 529 and the upstream message", res)
				}
				if n := f.count(); n != tt.attempts {
					t.Errorf("%d attempts, want %d", n, tt.attempts)
				}
			})
		}
	}
}

func TestACancelDuringTheBackoffAnswersCancelled(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			// Retry-After 30 s: longer than the client's read deadline (20 s), so the
			// answer arriving at all shows the wait was cut short.
			f := fakeOf(t, kind, false, answer{status: 429, retryAfter: "30", message: "slow down"}, answer{text: []string{"late"}})
			_, c, sid := onFake(t, f, "")
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":%q,"prompt":"hi"},"id":3}`, sid))
			f.request(t, 0)
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q},"id":4}`, sid))
			var res map[string]any
			for res == nil {
				m := c.recv()
				switch m["id"] {
				case float64(3):
					res, _ = m["result"].(map[string]any)
					if res == nil {
						t.Fatalf("prompt: %v", m)
					}
				case float64(4):
					if r, _ := m["result"].(map[string]any); r["cancelled"] != true {
						t.Fatalf("cancel: %v", m)
					}
				}
			}
			if res["stopReason"] != "cancelled" {
				t.Fatalf("result %v, want cancelled", res)
			}
			if n := f.count(); n != 1 {
				t.Errorf("%d requests: the cancelled call was tried again", n)
			}
		})
	}
}
