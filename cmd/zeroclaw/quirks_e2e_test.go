package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeanthropic"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// docs/protocol.md, "Remote providers", against the real binary: for the fake
// switched into each quirk of a real OpenAI-compatible server (and for the Anthropic
// fake), strict as well, one session goes through a two-step tool turn, a turn
// cancelled after output, the turn after it, and a kill -9 during a turn followed by
// a restart and a prompt on the restored session. Every request the fake got passes
// its strict checks: roles alternate, and every tool call carries the id the server
// gave it (or, where it gave none or repeats one, an id the daemon made in Mistral's
// form).

// quirkFake is a fake server of either kind with the session's script.
type quirkFake struct {
	kind     string
	url      string
	request  func(t testing.TB, n int) map[string]any
	count    func() int
	refused  func() int
	check    func(req map[string]any) error
	produced func(id string) bool
	callIDs  func(req map[string]any) []string
	// messages renders a request's messages as "role:text" (calls as "+call").
	messages func(req map[string]any) []string
}

const quirkArgs = `{"path":"."}`

func newQuirkFake(t *testing.T, kind string, q fakeopenai.Quirk) quirkFake {
	t.Helper()
	if kind == "anthropic" {
		call := fakeanthropic.Call{Name: "list_dir", Input: []string{`{"pa`, `th":"."}`}}
		f := fakeanthropic.New(t,
			fakeanthropic.Answer{Thinking: []string{"hm"}, Text: []string{"Let me look."}, Calls: []fakeanthropic.Call{call, call}},
			fakeanthropic.Answer{Text: []string{"Found ", "it."}},
			fakeanthropic.Answer{Text: []string{"partial"}, Hold: true},
			fakeanthropic.Answer{Text: []string{"fine"}},
			fakeanthropic.Answer{Text: []string{"doomed"}, Hold: true},
			fakeanthropic.Answer{Text: []string{"back"}},
		).Strict()
		return quirkFake{kind: kind, url: f.URL(), request: f.Request, count: f.Count, refused: f.Refused, check: f.Check, produced: f.Produced,
			callIDs: func(req map[string]any) []string {
				var ids []string
				for _, m := range fakeanthropic.Messages(req) {
					for _, b := range fakeanthropic.Blocks(m) {
						if b["type"] == "tool_use" {
							ids = append(ids, b["id"].(string))
						}
					}
				}
				return ids
			},
			messages: func(req map[string]any) []string {
				var out []string
				for _, m := range fakeanthropic.Messages(req) {
					calls := false
					for _, b := range fakeanthropic.Blocks(m) {
						switch b["type"] {
						case "text":
							out = append(out, fmt.Sprintf("%s:%s", m["role"], b["text"]))
						case "tool_use":
							if !calls {
								out = append(out, "assistant+call")
							}
							calls = true
						case "tool_result":
							out = append(out, "tool")
						}
					}
				}
				return out
			}}
	}
	call := fakeopenai.Call{Name: "list_dir", Args: quirkArgs}
	f := fakeopenai.New(t,
		fakeopenai.Answer{Thoughts: []string{"hm"}, Text: []string{"Let me look."}, Calls: []fakeopenai.Call{call, call}},
		fakeopenai.Answer{Text: []string{"Found ", "it."}},
		fakeopenai.Answer{Text: []string{"partial"}, Hold: true},
		fakeopenai.Answer{Text: []string{"fine"}},
		fakeopenai.Answer{Text: []string{"doomed"}, Hold: true},
		fakeopenai.Answer{Text: []string{"back"}},
	).Strict()
	if q != "" {
		f.With(q)
	}
	return quirkFake{kind: kind, url: f.URL(), request: f.Request, count: f.Count, refused: f.Refused, check: f.Check, produced: f.Produced,
		callIDs: func(req map[string]any) []string {
			var ids []string
			for _, m := range fakeopenai.Messages(req) {
				calls, _ := m["tool_calls"].([]any)
				for _, c := range calls {
					ids = append(ids, c.(map[string]any)["id"].(string))
				}
			}
			return ids
		},
		messages: func(req map[string]any) []string {
			var out []string
			for _, m := range fakeopenai.Messages(req) {
				if s, _ := m["content"].(string); s != "" && m["role"] != "tool" {
					out = append(out, fmt.Sprintf("%s:%s", m["role"], s))
				}
				if calls, _ := m["tool_calls"].([]any); len(calls) > 0 {
					out = append(out, "assistant+call")
				}
				if m["role"] == "tool" {
					out = append(out, "tool")
				}
			}
			return out
		}}
}

// waitChunk reads until an agent_message_chunk with text arrives.
func waitChunk(c *rpcConn, text string) {
	for {
		if m := c.recv(); m["method"] == "session/update" {
			if p, _ := m["params"].(map[string]any); p["type"] == "agent_message_chunk" && p["text"] == text {
				return
			}
		}
	}
}

func TestEveryQuirkThroughASessionThatIsCancelledKilledAndRestored(t *testing.T) {
	cases := []struct {
		kind  string
		quirk fakeopenai.Quirk
	}{{"openai", ""}, {"anthropic", ""}}
	for _, q := range fakeopenai.Quirks {
		cases = append(cases, struct {
			kind  string
			quirk fakeopenai.Quirk
		}{"openai", q})
	}
	for _, tt := range cases {
		name := tt.kind
		if tt.quirk != "" {
			name += "/" + string(tt.quirk)
		}
		t.Run(name, func(t *testing.T) {
			f := newQuirkFake(t, tt.kind, tt.quirk)
			h := home(t)
			os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
			conf := fmt.Sprintf("[providers.fake]\nkind = %q\nbase_url = %q\nmodel = \"m\"\napi_key = \"k\"\n\n"+
				"[agents.default]\nprovider = \"fake\"\nautonomy = \"full\"\n", f.kind, f.url)
			if err := os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, h, nil)
			c := dial(t, d.socket)
			c.initialize()
			const sid = "quirks"
			if r := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"` + sid + `"},"id":2}`); r["result"] == nil {
				t.Fatalf("session/new: %v", r)
			}

			// A two-step tool turn: two calls, then the answer.
			if _, res := prompted(t, c, sid, "where is it?", 3); res["stopReason"] != "end_turn" || res["text"] != "Let me look.\n\nFound it." {
				t.Fatalf("the tool turn: %v", res)
			}
			// A turn cancelled after output, and the turn after it.
			c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"go on"},"id":4}`)
			waitChunk(c, "partial")
			c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"},"id":5}`)
			if _, res := answered(t, c, 4); res["stopReason"] != "cancelled" {
				t.Fatalf("the cancelled turn: %v", res)
			}
			if _, res := prompted(t, c, sid, "and now?", 6); res["stopReason"] != "end_turn" || res["text"] != "fine" {
				t.Fatalf("the turn after the cancel: %v", res)
			}
			msgs := f.messages(f.request(t, 3))
			if tail := strings.Join(msgs[len(msgs)-3:], " | "); tail != "user:go on | assistant:partial | user:and now?" {
				t.Errorf("after the cancel the model was given … %s", tail)
			}

			// kill -9 during a turn; the restored session answers.
			c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"last"},"id":7}`)
			waitChunk(c, "doomed")
			kill9(t, d)
			d = startDaemon(t, h, nil)
			c = dial(t, d.socket)
			c.initialize()
			if r := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"` + sid + `"},"id":2}`); r["result"].(map[string]any)["resumed"] != true {
				t.Fatalf("resume: %v", r)
			}
			if _, res := prompted(t, c, sid, "after the restart", 3); res["stopReason"] != "end_turn" || res["text"] != "back" {
				t.Fatalf("the restored session: %v", res)
			}
			last := f.request(t, 5)
			want := "user:where is it? | assistant:Let me look. | assistant+call | tool | tool | assistant:Found it. | " +
				"user:go on | assistant:partial | user:and now? | assistant:fine | user:last\n\nafter the restart"
			if got := strings.Join(f.messages(last), " | "); got != want {
				t.Errorf("the restored session gave the model\n%s\nwant\n%s", got, want)
			}

			if n := f.count(); n != 6 || f.refused() != 0 {
				t.Fatalf("%d requests (want 6), %d refused", n, f.refused())
			}
			for n := range 6 {
				if err := f.check(f.request(t, n)); err != nil {
					t.Errorf("request %d: %v", n, err)
				}
			}
			// The model gets back the ids it produced, the same before and after the restart.
			ids := f.callIDs(last)
			if before := f.callIDs(f.request(t, 1)); len(ids) != 2 || strings.Join(before, ",") != strings.Join(ids, ",") {
				t.Fatalf("the calls went back as %v, after the restart as %v", before, ids)
			}
			for _, id := range ids {
				own := tt.quirk != fakeopenai.NoIDs
				if own && !f.produced(id) || !own && !provider.IsWireID(id) {
					t.Errorf("a call went back as %q (the server's own id expected: %v)", id, own)
				}
			}
		})
	}
}

// docs/protocol.md, "Remote providers": a refused key fails the turn with the status
// and the provider's own words, for both kinds, and the key (or the part the words
// quote) never shows.
func TestARefusedKeySaysWhyWithoutTheKey(t *testing.T) {
	const key = "sk-e2e-secret-0123456789abcdef"
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			msg := "Incorrect API key provided: sk-e2e-********************cdef. You can find your API key in your account."
			var url string
			if kind == "openai" {
				url = fakeopenai.New(t, fakeopenai.Answer{Status: 401, Message: msg}).URL()
			} else {
				url = fakeanthropic.New(t, fakeanthropic.Answer{Status: 401, ErrorType: "authentication_error", Message: msg}).URL()
			}
			h := home(t)
			os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
			conf := fmt.Sprintf("[providers.fake]\nkind = %q\nbase_url = %q\nmodel = \"m\"\napi_key = %q\n\n"+
				"[agents.default]\nprovider = \"fake\"\n", kind, url, key)
			if err := os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, h, nil)
			c := dial(t, d.socket)
			c.initialize()
			r := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default"},"id":2}`)
			sid := r["result"].(map[string]any)["sessionId"].(string)
			_, res := prompted(t, c, sid, "hi", 3)
			text, _ := res["text"].(string)
			want := "fake: the API key was refused (HTTP 401: Incorrect API key provided: [redacted]. You can find your API key in your account.); check providers.fake.api_key"
			if res["stopReason"] != "error" || text != want {
				t.Fatalf("result %v, want the error %q", res, want)
			}
			// The log is searched for the quoted part whole: its last four characters
			// alone are hex, and so turn up in a random session or turn id.
			const quoted = "sk-e2e-********************cdef"
			if strings.Contains(text, "cdef") || strings.Contains(d.stderr.String(), key) || strings.Contains(d.stderr.String(), quoted) {
				t.Errorf("the key shows: %q\n%s", text, d.stderr.String())
			}
		})
	}
}
