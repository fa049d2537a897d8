//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// TestARequestsUpdatesComeBeforeItsResponse: on the connection that asked, the
// session_info of session/set and the history_compacted of session/compact come
// before the request's response, every time (docs/protocol.md, "A client that
// falls behind"; the response used to be able to overtake its update, which the
// replay log stores first).
func TestARequestsUpdatesComeBeforeItsResponse(t *testing.T) {
	long := "a long answer with many details to keep in mind, repeated to take room. "
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{long, long, long}},
		fakeopenai.Answer{Text: []string{"the summary"}})
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	conf := fmt.Sprintf("[providers.fake]\nkind = \"openai\"\nbase_url = %q\nmodel = \"m\"\n\n"+
		"[agents.default]\nprovider = \"fake\"\n", fake.URL())
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	c.must("session/new", `{"agentAlias":"default","sessionId":"order"}`)

	// until reads c up to the response id, and returns the update types before it.
	until := func(id string) []string {
		t.Helper()
		var types []string
		for {
			m := c.recv()
			if m["id"] == id {
				if m["error"] != nil {
					t.Fatalf("%s: %v", id, m["error"])
				}
				return types
			}
			if p, ok := m["params"].(map[string]any); ok && m["method"] == "session/update" {
				types = append(types, fmt.Sprint(p["type"]))
			}
		}
	}
	for i := range 40 {
		id := fmt.Sprintf("set%d", i)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/set","params":{"sessionId":"order","title":"title %d"},"id":%q}`, i, id))
		if got := until(id); len(got) != 1 || got[0] != "session_info" {
			t.Fatalf("before session/set's response %d: %v, want its session_info", i, got)
		}
	}
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"order","prompt":"tell me"},"id":"p"}`)
	until("p")
	c.send(`{"jsonrpc":"2.0","method":"session/compact","params":{"sessionId":"order"},"id":"cp"}`)
	if got := until("cp"); len(got) != 1 || got[0] != "history_compacted" {
		t.Fatalf("before session/compact's response: %v, want its history_compacted", got)
	}
}
