package rpc

import (
	"bufio"
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestTranscripts runs every testdata/transcripts/*.txt file against a real Server
// over a real Unix socket. A transcript is conformance as data:
//
//	# a comment
//	--> {"jsonrpc":"2.0",...}   a line sent as is (it need not be valid JSON)
//	<-- {"jsonrpc":"2.0",...}   an expected reply; the replies after one --> line are
//	                             matched in any order, as JSON, with "<any>" matching any
//	                             value and "<number>" / "<string>" any value of that kind
//	<-- EOF                      the daemon closes the connection
//
// After a --> line with no expected reply, the harness proves the silence: it sends
// a probe request and requires the probe's answer to be the next line.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts found: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			steps := parseTranscript(t, file)
			h := startServer(t, Config{})
			conn := h.dial(t)
			runTranscript(t, conn, steps)
		})
	}
}

type step struct {
	line   int
	send   []byte
	expect []string // JSON patterns, or "EOF"
}

func parseTranscript(t *testing.T, file string) []step {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "--> "):
			steps = append(steps, step{line: i + 1, send: []byte(strings.TrimPrefix(line, "--> "))})
		case line == "-->": // an empty line sent
			steps = append(steps, step{line: i + 1, send: []byte{}})
		case strings.HasPrefix(line, "<-- "):
			if len(steps) == 0 {
				t.Fatalf("%s:%d: reply expected before anything was sent", file, i+1)
			}
			last := &steps[len(steps)-1]
			last.expect = append(last.expect, strings.TrimPrefix(line, "<-- "))
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			t.Fatalf("%s:%d: unrecognized line %q", file, i+1, line)
		}
	}
	return steps
}

func runTranscript(t *testing.T, conn net.Conn, steps []step) {
	t.Helper()
	r := bufio.NewReaderSize(conn, 64<<10)
	for n, s := range steps {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(append(s.send, '\n')); err != nil {
			t.Fatalf("line %d: write: %v", s.line, err)
		}
		if len(s.expect) == 1 && s.expect[0] == "EOF" {
			if line, err := r.ReadBytes('\n'); err != io.EOF {
				t.Fatalf("line %d: want the connection closed, got %q, %v", s.line, line, err)
			}
			return
		}
		if len(s.expect) == 0 {
			probe := fmt.Sprintf(`{"jsonrpc":"2.0","method":"status","id":"probe-%d"}`, n)
			conn.Write([]byte(probe + "\n"))
			got := readLine(t, r, s.line)
			var m struct {
				ID jsontext.Value `json:"id"`
			}
			if json.Unmarshal(got, &m) != nil || string(m.ID) != fmt.Sprintf(`"probe-%d"`, n) {
				t.Fatalf("line %d: want no reply, got %s", s.line, got)
			}
			continue
		}
		var got [][]byte
		for range s.expect {
			got = append(got, readLine(t, r, s.line))
		}
		matchReplies(t, s.line, s.expect, got)
	}
}

func readLine(t *testing.T, r *bufio.Reader, at int) []byte {
	t.Helper()
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("line %d: reading a reply: %v (got %q)", at, err, line)
	}
	return bytes.TrimSuffix(line, []byte("\n"))
}

// matchReplies pairs every expected pattern with a distinct reply.
func matchReplies(t *testing.T, at int, patterns []string, got [][]byte) {
	t.Helper()
	used := make([]bool, len(got))
	for _, p := range patterns {
		var want any
		if err := json.Unmarshal([]byte(p), &want); err != nil {
			t.Fatalf("line %d: bad pattern %s: %v", at, p, err)
		}
		found := false
		for i, g := range got {
			var v any
			if used[i] || json.Unmarshal(g, &v) != nil {
				continue
			}
			if matches(want, v) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Fatalf("line %d: no reply matches\n  %s\ngot:\n  %s", at, p, bytes.Join(got, []byte("\n  ")))
		}
	}
}

func matches(want, got any) bool {
	switch w := want.(type) {
	case string:
		switch w {
		case "<any>":
			return true
		case "<number>":
			_, ok := got.(float64)
			return ok
		case "<string>":
			_, ok := got.(string)
			return ok
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !matches(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matches(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}
