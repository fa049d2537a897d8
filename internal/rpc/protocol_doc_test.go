package rpc

import (
	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
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

	// The grant table of the Authorization section names each method once, with the
	// grant of its row.
	documented := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		grant := strings.Trim(strings.TrimSpace(cells[2]), "`")
		for _, m := range strings.Split(cells[1], ",") {
			name := strings.Trim(strings.TrimSpace(m), "`")
			if _, dup := documented[name]; dup {
				t.Errorf("the grant table names %s twice", name)
			}
			documented[name] = grant
		}
	}
	for _, name := range s.names {
		want := string(s.methods[name].grant)
		switch want {
		case "":
			want = "none"
		case string(auth.Admin):
			want = "admin"
		}
		if got, ok := documented[name]; !ok {
			t.Errorf("method %s is missing from the grant table of docs/protocol.md", name)
		} else if got != want {
			t.Errorf("docs/protocol.md says %s needs %q; it needs %q", name, got, want)
		}
	}
}
