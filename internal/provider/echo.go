package provider

import (
	"context"
	"encoding/json/jsontext"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Echo is the deterministic provider of kind echo: no network, so that clients can
// be built and tested offline (docs/protocol.md, "The echo provider"). Its zero value
// is ready to use.
//
// The turn's prompt is the last RoleUser message. Lines of the prompt are separated
// by "\n" (a "\r" before it is dropped). A call is the turn's first when no RoleTool
// message follows the prompt. In that call:
//
//   - a line "/think TEXT" streams TEXT as one thought delta (nothing when TEXT is empty);
//   - a line "/tool NAME {json}" becomes the tool call {ID "tc_<n>", NAME, the JSON
//     object}, n counting from 1 in the order of the lines; without JSON the
//     arguments are {}; when the rest is not a single valid JSON object, the line
//     is an ordinary line.
//
// If the first call found tool calls it returns them with empty Text. Otherwise, in
// the first call or any later one, it replies
//
//	"echo: " + the ordinary lines joined by "\n"
//
// followed, for each RoleTool message after the prompt in order, by
//
//	"\n" + Name + " -> " + the first 200 bytes of Text (cut back to a UTF-8 boundary)
//
// with the output's bytes kept as they are (a trailing newline stays). So the prompt
// "hi\n/tool shell {\"command\":\"ls\"}\nthere" replies, after the result "a.txt",
// "echo: hi\nthere\nshell -> a.txt".
//
// The reply streams as one delta per word: each piece ends after the whitespace run
// that follows a word, so the pieces concatenate to Result.Text. Usage counts
// whitespace-separated words: the whole prompt in (first call only, else 0), the
// reply out (0 for a call that returns tool calls).
type Echo struct{}

// echoResultMax is how much of a tool's output the reply repeats.
const echoResultMax = 200

// Stream implements Provider.
func (Echo) Stream(ctx context.Context, req Request, emit func(Delta)) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	at := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == RoleUser {
			at = i
			break
		}
	}
	var prompt string
	var after []Message
	if at >= 0 {
		prompt, after = req.Messages[at].Text, req.Messages[at+1:]
	} else {
		after = req.Messages
	}
	first := true
	for _, m := range after {
		if m.Role == RoleTool {
			first = false
			break
		}
	}

	var reply strings.Builder
	reply.Grow(len(prompt) + len("echo: "))
	reply.WriteString("echo: ")
	var calls []ToolCall
	sep := false
	for line := range echoLines(prompt) {
		if text, ok := strings.CutPrefix(line, "/think "); ok {
			if first && text != "" {
				emit(Delta{Thought: true, Text: text})
			}
			continue
		}
		if name, args, ok := parseToolLine(line); ok {
			if first {
				calls = append(calls, ToolCall{ID: "tc_" + strconv.Itoa(len(calls)+1), Name: name, Arguments: args})
			}
			continue
		}
		if sep {
			reply.WriteByte('\n')
		}
		reply.WriteString(line)
		sep = true
	}

	// The prompt's words are counted once the reply has streamed, so that its first
	// word is not held back by them (a 40 KB prompt's count took some 0.1 ms); the
	// context's count after finds them in wordCounts.
	var usage Usage
	countPrompt := func() {
		if first {
			usage.InputTokens = wordCounts.count(prompt)
		}
	}
	if len(calls) > 0 {
		countPrompt()
		usage.ContextTokens = contextWords(req)
		return Result{ToolCalls: calls, Usage: usage}, nil
	}
	for _, m := range after {
		if m.Role != RoleTool {
			continue
		}
		reply.WriteByte('\n')
		reply.WriteString(m.Name)
		reply.WriteString(" -> ")
		reply.WriteString(cutUTF8(m.Text, echoResultMax))
	}
	text := reply.String()
	words, err := streamWords(ctx, text, emit)
	if err != nil {
		return Result{}, err
	}
	countPrompt()
	usage.OutputTokens = words
	usage.ContextTokens = contextWords(req) + words
	// The reply is the next call's context: its words are counted already.
	wordCounts.remember(text, words)
	return Result{Text: text, Usage: usage}, nil
}

// contextWords is the size of the request's context in echo's tokens: the words of
// the system prompt and of every message.
func contextWords(req Request) int {
	n := wordCounts.count(req.System)
	for _, m := range req.Messages {
		n += wordCounts.count(m.Text)
	}
	return n
}

// wordCounts remembers the words of the long texts contextWords counted: every call
// of a session sends its whole context again (a session keeps its context's
// messages from turn to turn), and counting it each time would make each call's
// cost grow with the session's history (docs/protocol.md,
// "A daemon that runs for months"). A text is known by where it
// lies and its length; the cache keeps the text, so that the memory cannot hold
// another text while its entry exists, and the comparison of a text with itself
// is the comparison of two pointers. It keeps at most wordCacheBytes of texts.
var wordCounts = &wordCache{counts: map[wordKey]wordEntry{}}

type wordCache struct {
	mu     sync.Mutex
	counts map[wordKey]wordEntry
	bytes  int
}

type wordKey struct {
	p *byte
	n int
}

type wordEntry struct {
	s     string
	words int
}

const (
	wordCacheMin   = 1 << 10  // shorter texts are counted each time
	wordCacheBytes = 16 << 20 // texts kept; all are dropped when it is reached
)

func (c *wordCache) count(s string) int {
	if len(s) < wordCacheMin {
		return countWords(s)
	}
	k := wordKey{unsafe.StringData(s), len(s)}
	c.mu.Lock()
	e, ok := c.counts[k]
	c.mu.Unlock()
	if ok && e.s == s {
		return e.words
	}
	n := countWords(s)
	c.remember(s, n)
	return n
}

// remember records that s has words words (counted as countWords does), for
// count to find.
func (c *wordCache) remember(s string, words int) {
	if len(s) < wordCacheMin {
		return
	}
	k := wordKey{unsafe.StringData(s), len(s)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+len(s) > wordCacheBytes {
		clear(c.counts)
		c.bytes = 0
	}
	if old, ok := c.counts[k]; ok {
		c.bytes -= len(old.s)
	}
	c.counts[k] = wordEntry{s, words}
	c.bytes += len(s)
}

// echoLines yields the lines of s: split at "\n", without a trailing "\r".
func echoLines(s string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for {
			line, rest, more := strings.Cut(s, "\n")
			if !yield(strings.TrimSuffix(line, "\r")) || !more {
				return
			}
			s = rest
		}
	}
}

// parseToolLine reads "/tool NAME {json}". ok is false when the line is not one:
// no NAME, or a rest that is not exactly one valid JSON object.
func parseToolLine(line string) (name string, args jsontext.Value, ok bool) {
	rest, ok := strings.CutPrefix(line, "/tool ")
	if !ok {
		return "", nil, false
	}
	rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	end := strings.IndexFunc(rest, unicode.IsSpace)
	if end < 0 {
		end = len(rest)
	}
	name, rest = rest[:end], strings.TrimSpace(rest[end:])
	if name == "" {
		return "", nil, false
	}
	if rest == "" {
		return name, jsontext.Value("{}"), true
	}
	v := jsontext.Value(rest)
	if v.Kind() != '{' || !v.IsValid() {
		return "", nil, false
	}
	return name, v, true
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not split a
// UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// streamWords emits s in pieces, each ending after the whitespace run that follows
// a word (leading whitespace joins the first piece), and returns the number of
// words. It stops with ctx.Err() when ctx ends. Each piece is a substring of s: no
// allocation per delta.
func streamWords(ctx context.Context, s string, emit func(Delta)) (int, error) {
	done := ctx.Done()
	words, start := 0, 0
	i := skipUnicodeSpace(s, 0)
	for i < len(s) {
		i = skipUnicodeSpace(s, skipWord(s, i))
		words++
		if done != nil {
			select {
			case <-done:
				return words, ctx.Err()
			default:
			}
		}
		emit(Delta{Text: s[start:i]})
		start = i
	}
	if start < len(s) {
		emit(Delta{Text: s[start:]})
	}
	return words, nil
}

// countWords counts whitespace-separated words, as strings.Fields would, without
// allocating. It runs over every message of the context on each call (the usage's
// context tokens), so ASCII is one table lookup a byte, without a branch on it: a
// word starts wherever a non-space follows a space.
func countWords(s string) int {
	n, prev := 0, 1 // prev: 1 when the byte before was a space (or there was none)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			sp := int(asciiSpaces[c])
			n += prev &^ sp
			prev = sp
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		sp := 0
		if unicode.IsSpace(r) {
			sp = 1
		}
		n += prev &^ sp
		prev = sp
		i += size
	}
	return n
}

// asciiSpaces[c] is 1 for the ASCII spaces unicode.IsSpace knows.
var asciiSpaces = [utf8.RuneSelf]uint8{' ': 1, '\n': 1, '\t': 1, '\r': 1, '\v': 1, '\f': 1}

func skipUnicodeSpace(s string, i int) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if !asciiSpace(c) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}

func skipWord(s string, i int) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiSpace(c) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}
