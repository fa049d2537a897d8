package rpc

import (
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestEveryServedMethodIsDocumented keeps docs/protocol.md, the wire reference for
// client authors, in step with the method table: each method the server serves has a
// heading "### `name`" there.
func TestEveryServedMethodIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "### `"); ok {
			headings[strings.TrimSuffix(strings.TrimSpace(name), "`")] = true
		}
	}
	s := NewServer(Config{Logger: slog.New(slog.DiscardHandler)})
	if len(s.names) == 0 {
		t.Fatal("the server serves no methods")
	}
	for _, name := range s.names {
		if !headings[name] {
			t.Errorf("method %s is served but has no \"### `%s`\" heading in docs/protocol.md", name, name)
		}
	}
}
