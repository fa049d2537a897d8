package provider

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

func user(text string) Message { return Message{Role: RoleUser, Text: text} }

func toolResult(id, name, out string) Message {
	return Message{Role: RoleTool, ToolCallID: id, Name: name, Text: out}
}

func TestEchoFollowsSpec(t *testing.T) {
	toolPrompt := "run it\n/tool shell {\"command\":\"ls\"}\n/think about files\n/tool read_file {\"path\":\"a.txt\"}"
	calls := []ToolCall{
		{ID: "tc_1", Name: "shell", Arguments: jsontext.Value(`{"command":"ls"}`)},
		{ID: "tc_2", Name: "read_file", Arguments: jsontext.Value(`{"path":"a.txt"}`)},
	}
	long := strings.Repeat("a", 199) + "é" + "tail" // é takes bytes 199 and 200
	tests := []struct {
		name     string
		messages []Message
		text     string
		deltas   []string // visible pieces, in order
		thoughts []string
		calls    []ToolCall
		usage    Usage
	}{
		{
			name:     "plain prompt",
			messages: []Message{user("hello  world")},
			text:     "echo: hello  world",
			deltas:   []string{"echo: ", "hello  ", "world"},
			usage:    Usage{InputTokens: 2, OutputTokens: 3},
		},
		{
			name:     "think lines stream as thoughts and leave the reply",
			messages: []Message{user("/think first idea\nhi there\n/think second")},
			text:     "echo: hi there",
			deltas:   []string{"echo: ", "hi ", "there"},
			thoughts: []string{"first idea", "second"},
			usage:    Usage{InputTokens: 7, OutputTokens: 3},
		},
		{
			name:     "tool lines make tool calls with empty text",
			messages: []Message{user(toolPrompt)},
			thoughts: []string{"about files"},
			calls:    calls,
			usage:    Usage{InputTokens: 11},
		},
		{
			name: "after the results the reply names each",
			messages: []Message{
				user(toolPrompt),
				{Role: RoleAssistant, ToolCalls: calls},
				toolResult("tc_1", "shell", "a.txt\n"),
				toolResult("tc_2", "read_file", "hello"),
			},
			text:   "echo: run it\nshell -> a.txt\n\nread_file -> hello",
			deltas: []string{"echo: ", "run ", "it\n", "shell ", "-> ", "a.txt\n\n", "read_file ", "-> ", "hello"},
			usage:  Usage{InputTokens: 0, OutputTokens: 9},
		},
		{
			name: "a result is cut to 200 bytes on a rune boundary",
			messages: []Message{
				user("/tool read_file {}"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "tc_1", Name: "read_file", Arguments: jsontext.Value(`{}`)}}},
				toolResult("tc_1", "read_file", long),
			},
			text:   "echo: \nread_file -> " + strings.Repeat("a", 199),
			deltas: []string{"echo: \n", "read_file ", "-> ", strings.Repeat("a", 199)},
			usage:  Usage{OutputTokens: 4},
		},
		{
			name:     "a tool line without JSON has empty arguments",
			messages: []Message{user("/tool list_dir")},
			calls:    []ToolCall{{ID: "tc_1", Name: "list_dir", Arguments: jsontext.Value(`{}`)}},
			usage:    Usage{InputTokens: 2},
		},
		{
			name:     "a tool line whose rest is not one JSON object is an ordinary line",
			messages: []Message{user("/tool shell {not json\n/tool shell [1]\n/tool shell {} {}\n/tool")},
			text:     "echo: /tool shell {not json\n/tool shell [1]\n/tool shell {} {}\n/tool",
			deltas: []string{"echo: ", "/tool ", "shell ", "{not ", "json\n", "/tool ", "shell ", "[1]\n",
				"/tool ", "shell ", "{} ", "{}\n", "/tool"},
			usage: Usage{InputTokens: 12, OutputTokens: 13},
		},
		{
			name: "the prompt is the last user message; earlier turns do not count",
			messages: []Message{
				user("/tool shell {}"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "tc_1", Name: "shell", Arguments: jsontext.Value(`{}`)}}},
				toolResult("tc_1", "shell", "old"),
				{Role: RoleAssistant, Text: "echo: \nshell -> old"},
				user("/think again\nnew"),
			},
			text:     "echo: new",
			deltas:   []string{"echo: ", "new"},
			thoughts: []string{"again"},
			usage:    Usage{InputTokens: 3, OutputTokens: 2},
		},
		{
			name: "thoughts are not repeated after the results",
			messages: []Message{
				user("/think plan\n/tool shell {}"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "tc_1", Name: "shell", Arguments: jsontext.Value(`{}`)}}},
				toolResult("tc_1", "shell", "ok"),
			},
			text:   "echo: \nshell -> ok",
			deltas: []string{"echo: \n", "shell ", "-> ", "ok"},
			usage:  Usage{OutputTokens: 4},
		},
		{
			name:     "CRLF lines",
			messages: []Message{user("/think a\r\nb\r\nc")},
			text:     "echo: b\nc",
			deltas:   []string{"echo: ", "b\n", "c"},
			thoughts: []string{"a"},
			usage:    Usage{InputTokens: 4, OutputTokens: 3},
		},
		{
			name:   "no prompt at all",
			text:   "echo: ",
			deltas: []string{"echo: "},
			usage:  Usage{OutputTokens: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			res, err := Echo{}.Stream(context.Background(), Request{Messages: tt.messages}, rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.text {
				t.Errorf("Text = %q, want %q", res.Text, tt.text)
			}
			if got := rec.text(); got != res.Text {
				t.Errorf("deltas concatenate to %q, Text is %q", got, res.Text)
			}
			var pieces []string
			for _, d := range rec.deltas {
				if !d.Thought {
					pieces = append(pieces, d.Text)
				}
			}
			if diff := diff(tt.deltas, pieces); diff != "" {
				t.Errorf("visible deltas (-want +got):\n%s", diff)
			}
			if diff := diff(tt.thoughts, rec.thoughts()); diff != "" {
				t.Errorf("thoughts (-want +got):\n%s", diff)
			}
			if diff := diff(tt.calls, res.ToolCalls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if got := (Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens}); got != tt.usage {
				t.Errorf("Usage = %+v, want %+v", res.Usage, tt.usage)
			}
		})
	}
}

func TestEchoIsDeterministic(t *testing.T) {
	req := Request{Messages: []Message{user("/think x\nsame words every time\n/tool shell {\"command\":\"ls\"}")}}
	var a, b recorder
	ra, _ := Echo{}.Stream(context.Background(), req, a.emit)
	rb, _ := Echo{}.Stream(context.Background(), req, b.emit)
	if diff := diff(ra, rb); diff != "" {
		t.Error(diff)
	}
	if diff := diff(a.deltas, b.deltas); diff != "" {
		t.Error(diff)
	}
}

func TestEchoStreamsALongPromptWordByWord(t *testing.T) {
	prompt := strings.Repeat("the quick brown fox\n", 2000)
	var rec recorder
	res, err := Echo{}.Stream(context.Background(), Request{Messages: []Message{user(prompt)}}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.deltas) != 8001 { // "echo: " and four words a line
		t.Errorf("%d deltas, want 8001", len(rec.deltas))
	}
	if rec.text() != res.Text {
		t.Error("deltas do not concatenate to Text")
	}
	if want := "echo: " + strings.TrimSuffix(prompt, "\n") + "\n"; res.Text != want {
		// The prompt's last line is empty, so the joined lines end in "\n".
		t.Errorf("Text ends %q", res.Text[len(res.Text)-30:])
	}
	if res.Usage.InputTokens != 8000 || res.Usage.OutputTokens != 8001 {
		t.Errorf("Usage = %+v", res.Usage)
	}
}

func TestEchoStopsWhenCancelledMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	emit := func(Delta) {
		n++
		if n == 3 {
			cancel()
		}
	}
	_, err := Echo{}.Stream(ctx, Request{Messages: []Message{user(strings.Repeat("word ", 1000))}}, emit)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n != 3 {
		t.Errorf("%d deltas after the cancel at the third, want none", n-3)
	}
}

func TestEchoRefusesAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Echo{}.Stream(ctx, Request{Messages: []Message{user("hi")}}, func(Delta) { t.Error("emitted") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestCutUTF8(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"},
		{"aé", 3, "aé"},
		{"日本", 4, "日"},
		{"日本", 2, ""},
	} {
		if got := cutUTF8(tt.s, tt.n); got != tt.want {
			t.Errorf("cutUTF8(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func BenchmarkEchoStream(b *testing.B) {
	req := Request{Messages: []Message{user(strings.Repeat("the quick brown fox jumps\n", 2000))}}
	emit := func(Delta) {}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Echo{}).Stream(context.Background(), req, emit); err != nil {
			b.Fatal(err)
		}
	}
}

func TestEchoContextTokensAreTheWordsOfTheWholeContextAndTheReply(t *testing.T) {
	req := Request{System: "be brief", Messages: []Message{
		{Role: RoleUser, Text: "one two"}, {Role: RoleAssistant, Text: "echo: one two"},
		{Role: RoleUser, Text: "three four five"},
	}}
	res, err := Echo{}.Stream(t.Context(), req, func(Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	// 2 (system) + 2 + 3 + 3 in, "echo: three four five" (4) out.
	if res.Usage.InputTokens != 3 || res.Usage.OutputTokens != 4 || res.Usage.Context() != 14 {
		t.Errorf("Usage = %+v (Context %d), want in 3, out 4, context 14", res.Usage, res.Usage.Context())
	}
	if (Usage{InputTokens: 5, OutputTokens: 2}).Context() != 7 {
		t.Error("Context() of a usage without ContextTokens is not input+output")
	}
}

// countWords is strings.Fields' count, for ASCII, other spaces and bad UTF-8 alike.
func FuzzCountWordsIsFieldsCount(f *testing.F) {
	for _, s := range []string{"", " ", "a", " a b  c ", "line 1 word word\nline 2", "a\u00a0b\u0085c\u3000d", "\xff \xfe\x80x", "\t\v\f\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := countWords(s), len(strings.Fields(s)); got != want {
			t.Fatalf("countWords(%q) = %d, want %d", s, got, want)
		}
	})
}

// BenchmarkContextWords is the usage's count over a context of 100 turns of a
// 2,000-line prompt and its echo (what a long streamed session sends each call).
func BenchmarkContextWords(b *testing.B) {
	var line strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&line, "line %d word word\n", i+1)
	}
	req := Request{}
	for range 100 {
		req.Messages = append(req.Messages, Message{Role: RoleUser, Text: line.String()}, Message{Role: RoleAssistant, Text: line.String()})
	}
	b.SetBytes(int64(200 * line.Len()))
	for b.Loop() {
		contextWords(req)
	}
}

// BenchmarkCountWords is one message of a 2,000-line prompt.
func BenchmarkCountWords(b *testing.B) {
	var line strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&line, "line %d word word\n", i+1)
	}
	s := line.String()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		countWords(s)
	}
}

// The context count's cache answers a long text it has seen, and a different text
// of the same length is counted for itself.
func TestContextWordsOfLongTextsAreCountedOnce(t *testing.T) {
	a := strings.Repeat("word ", 400) // 400 words, 2,000 bytes
	b := strings.Repeat("w d ", 500)  // 1,000 words, as long
	c := strings.Clone(a)             // a's text elsewhere in memory
	req := Request{Messages: []Message{{Text: a}, {Text: b}, {Text: c}}}
	for range 3 {
		if got := contextWords(req); got != 400+1000+400 {
			t.Fatalf("contextWords = %d, want %d", got, 400+1000+400)
		}
	}
}

// A long reply's words are remembered as the words of the next call's context: the
// next turn counts none of them again, and counts what countWords would.
func TestEchoRemembersTheWordsOfALongReply(t *testing.T) {
	prompt := strings.Repeat("word wörd\u00a0word\t", 300) // over wordCacheMin, with other spaces
	res, err := Echo{}.Stream(t.Context(), Request{Messages: []Message{user(prompt)}}, func(Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	wordCounts.mu.Lock()
	e, ok := wordCounts.counts[wordKey{unsafe.StringData(res.Text), len(res.Text)}]
	wordCounts.mu.Unlock()
	if !ok || e.s != res.Text {
		t.Fatal("the reply's words are not remembered")
	}
	if want := countWords(res.Text); e.words != want || res.Usage.OutputTokens != want {
		t.Errorf("remembered %d words, the usage says %d, countWords %d", e.words, res.Usage.OutputTokens, want)
	}
	next := Request{Messages: []Message{user(prompt), {Role: RoleAssistant, Text: res.Text}, user("again")}}
	again, err := Echo{}.Stream(t.Context(), next, func(Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	// Its context: the prompt, the reply and "again"; then its own "echo: again".
	if want := countWords(prompt) + countWords(res.Text) + 1 + 2; again.Usage.ContextTokens != want {
		t.Errorf("next call's context: %d words, want %d", again.Usage.ContextTokens, want)
	}
}
