package rpc

import (
	"bufio"
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTranscripts runs every testdata/transcripts/*.txt file against a real Server
// over a real Unix socket, wired as the daemon wires it (config dir on disk, session
// store, pairings; see newConfServer), as the daemon's own user. A transcript is
// conformance as data:
//
//	# a comment
//	--> {"jsonrpc":"2.0",...}   a line sent as is (it need not be valid JSON)
//	<-- {"jsonrpc":"2.0",...}   an expected reply; the replies after one --> line are
//	                             matched in any order, as JSON, with "<any>" matching any
//	                             value and "<number>" / "<string>" any value of that kind
//	<-| {"jsonrpc":"2.0",...}   an expected reply that comes after every notification
//	                             of its --> line (a prompt's answer after its updates)
//	<-- EOF                      the daemon closes the connection
//
// After a --> line with no expected reply, and after the last line, the harness
// proves the silence: it sends a probe request and requires the probe's answer to be
// the next line.
//
// NAME.txt runs against a daemon whose config.toml is NAME.toml when that file
// exists (the defaults otherwise); ${uid} in it stands for the uid the connection
// comes from (the daemon's own). In sent and expected lines, ${dataDir} and
// ${configDir} stand for that daemon's directories, ${uid} for that uid.
//
// A pattern "<=NAME>" matches any value the first time and binds NAME to it (once
// its step has matched), and later only that same value; ${NAME} in a later line
// stands for it (a string as its contents, anything else as JSON). So a transcript
// answers the approval request it was sent, and checks that every update of a turn
// carries that turn's turnId. An object pattern with the member "...": "<any>"
// allows members it does not name (for a result whose other members another
// transcript pins down).
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts found: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			var body []byte
			if b, err := os.ReadFile(strings.TrimSuffix(file, ".txt") + ".toml"); err == nil {
				body = b
			} else if !os.IsNotExist(err) {
				t.Fatal(err)
			}
			vars := map[string]any{"uid": os.Getuid()}
			s := newConfServer(t, expand(t, 0, string(body), vars))
			vars["dataDir"], vars["configDir"] = filepath.Join(s.dir, "data"), s.dir
			steps := parseTranscript(t, file)
			conn := s.as(os.Getuid()).dial(t)
			runTranscript(t, conn, steps, vars)
		})
	}
}

type step struct {
	line   int
	send   []byte
	expect []string // JSON patterns, or "EOF"
	last   int      // the index in expect of the <-| pattern, or -1
}

// variable is ${NAME} in a transcript line.
var variable = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// expand replaces every ${NAME} in line by the value of NAME.
func expand(t *testing.T, at int, line string, vars map[string]any) string {
	t.Helper()
	return variable.ReplaceAllStringFunc(line, func(v string) string {
		val, ok := vars[v[2:len(v)-1]]
		if !ok {
			t.Fatalf("line %d: %s is not bound", at, v)
		}
		if s, ok := val.(string); ok {
			return s
		}
		b, _ := json.Marshal(val)
		return string(b)
	})
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
			steps = append(steps, step{line: i + 1, send: []byte(strings.TrimPrefix(line, "--> ")), last: -1})
		case line == "-->": // an empty line sent
			steps = append(steps, step{line: i + 1, send: []byte{}, last: -1})
		case strings.HasPrefix(line, "<-- "), strings.HasPrefix(line, "<-| "):
			if len(steps) == 0 {
				t.Fatalf("%s:%d: reply expected before anything was sent", file, i+1)
			}
			st := &steps[len(steps)-1]
			if strings.HasPrefix(line, "<-| ") {
				if st.last >= 0 {
					t.Fatalf("%s:%d: two replies cannot both come last", file, i+1)
				}
				st.last = len(st.expect)
			}
			st.expect = append(st.expect, line[len("<-- "):])
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			t.Fatalf("%s:%d: unrecognized line %q", file, i+1, line)
		}
	}
	return steps
}

func runTranscript(t *testing.T, conn net.Conn, steps []step, vars map[string]any) {
	t.Helper()
	r := bufio.NewReaderSize(conn, 64<<10)
	for n, s := range steps {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		send := []byte(expand(t, s.line, string(s.send), vars))
		if _, err := conn.Write(append(send, '\n')); err != nil {
			t.Fatalf("line %d: write: %v", s.line, err)
		}
		if len(s.expect) == 1 && s.expect[0] == "EOF" {
			if line, err := r.ReadBytes('\n'); err != io.EOF {
				t.Fatalf("line %d: want the connection closed, got %q, %v", s.line, line, err)
			}
			return
		}
		if len(s.expect) == 0 {
			expectSilence(t, conn, r, s.line, n)
			continue
		}
		var got [][]byte
		for range s.expect {
			got = append(got, readLine(t, r, s.line))
		}
		patterns := make([]string, len(s.expect))
		for i, p := range s.expect {
			patterns[i] = expand(t, s.line, p, vars)
		}
		at := matchReplies(t, s.line, patterns, got, vars)
		if s.last >= 0 {
			for _, g := range got[at[s.last]+1:] {
				var m struct {
					Method *string `json:"method"`
				}
				if json.Unmarshal(g, &m) == nil && m.Method != nil {
					t.Fatalf("line %d: want\n  %s\nafter every notification, got:\n  %s", s.line, patterns[s.last], bytes.Join(got, []byte("\n  ")))
				}
			}
		}
	}
	if len(steps) > 0 {
		expectSilence(t, conn, r, steps[len(steps)-1].line, len(steps))
	}
}

// expectSilence proves that nothing more came: the answer to a probe request is the
// next line.
func expectSilence(t *testing.T, conn net.Conn, r *bufio.Reader, at, n int) {
	t.Helper()
	probe := fmt.Sprintf(`{"jsonrpc":"2.0","method":"status","id":"probe-%d"}`, n)
	conn.Write([]byte(probe + "\n"))
	got := readLine(t, r, at)
	var m struct {
		ID jsontext.Value `json:"id"`
	}
	if json.Unmarshal(got, &m) != nil || string(m.ID) != fmt.Sprintf(`"probe-%d"`, n) {
		t.Fatalf("line %d: want no reply, got %s", at, got)
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

// matchReplies pairs every expected pattern with a distinct reply, and binds the
// names the patterns capture. It returns, for each pattern, the index of its reply.
func matchReplies(t *testing.T, at int, patterns []string, got [][]byte, vars map[string]any) []int {
	t.Helper()
	used := make([]bool, len(got))
	index := make([]int, len(patterns))
	for pi, p := range patterns {
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
			bound := map[string]any{}
			if matches(want, v, vars, bound) {
				used[i], found, index[pi] = true, true, i
				maps.Copy(vars, bound)
				break
			}
		}
		if !found {
			t.Fatalf("line %d: no reply matches\n  %s\ngot:\n  %s", at, p, bytes.Join(got, []byte("\n  ")))
		}
	}
	return index
}

// matches reports whether got matches the pattern want. Names captured by "<=NAME>"
// are looked up in vars, then in bound, where new ones are added.
func matches(want, got any, vars, bound map[string]any) bool {
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
		if name, ok := strings.CutPrefix(w, "<="); ok && strings.HasSuffix(name, ">") {
			name = strings.TrimSuffix(name, ">")
			if v, ok := vars[name]; ok {
				return reflect.DeepEqual(v, got)
			}
			if v, ok := bound[name]; ok {
				return reflect.DeepEqual(v, got)
			}
			bound[name] = got
			return true
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		_, more := w["..."]
		if !ok || (!more && len(g) != len(w)) {
			return false
		}
		for k, wv := range w {
			if k == "..." {
				continue
			}
			gv, ok := g[k]
			if !ok || !matches(wv, gv, vars, bound) {
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
			if !matches(w[i], g[i], vars, bound) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}
