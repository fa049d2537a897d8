package store

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// storedMessage is the on-disk form of a llm.Message (checkpoints and
// snapshots). It is its own type with explicit names so that renaming a field of
// llm.Message cannot silently change what old databases mean.
type storedMessage struct {
	Role       string       `json:"role"`
	Text       string       `json:"text,omitzero"`
	ToolCalls  []storedCall `json:"tool_calls,omitzero"`
	ToolCallID string       `json:"tool_call_id,omitzero"`
	Name       string       `json:"name,omitzero"`
	IsError    bool         `json:"is_error,omitzero"`
}

// storedCall keeps the arguments as a string: they are whatever text the model
// produced, and a model can produce invalid JSON; a checkpoint must not be lost
// over it.
//
// ProviderID is the id the provider gave the call (docs/protocol.md,
// "Remote providers"), beside the daemon's own ID: absent in rows stored before it
// was kept, and where the provider gave none. The model context is rebuilt from it,
// so a session restored from these rows sends the model the ids it produced.
type storedCall struct {
	ID         string `json:"id"`
	ProviderID string `json:"provider_id,omitzero"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments"`
}

// Invalid UTF-8 (which the tools already replace) becomes U+FFFD rather than an
// error: losing a byte beats losing a checkpoint.
var codecOpts = json.JoinOptions(jsontext.AllowInvalidUTF8(true), json.Deterministic(true))

func toStored(m llm.Message) storedMessage {
	sm := storedMessage{Role: string(m.Role), Text: m.Text, ToolCallID: m.ToolCallID, Name: m.Name, IsError: m.IsError}
	for _, c := range m.ToolCalls {
		sm.ToolCalls = append(sm.ToolCalls, storedCall{ID: c.ID, ProviderID: c.ProviderID, Name: c.Name, Arguments: string(c.Arguments)})
	}
	return sm
}

func fromStored(sm storedMessage) llm.Message {
	m := llm.Message{Role: llm.Role(sm.Role), Text: sm.Text, ToolCallID: sm.ToolCallID, Name: sm.Name, IsError: sm.IsError}
	for _, c := range sm.ToolCalls {
		var args jsontext.Value
		if c.Arguments != "" {
			args = jsontext.Value(c.Arguments)
		}
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c.ID, ProviderID: c.ProviderID, Name: c.Name, Arguments: args})
	}
	return m
}

// encodeMessage returns m's stored form, written straight into the string the
// checkpoint row binds, whose room is reserved beforehand from m's size: a 40 KB
// prompt or answer was copied twice more, into Marshal's result and then into
// the string.
func encodeMessage(m llm.Message) (string, error) {
	var b strings.Builder
	b.Grow(encodedSize(m))
	if err := json.MarshalWrite(&b, toStored(m), codecOpts); err != nil {
		return "", fmt.Errorf("store: encoding a %s message: %w", m.Role, err)
	}
	return b.String(), nil
}

// encodedSize is about what m's stored form takes: its strings with an eighth for
// escapes (a newline is two bytes), and the names around them.
func encodedSize(m llm.Message) int {
	n := len(m.Text) + len(m.ToolCallID) + len(m.Name)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.ProviderID) + len(c.Name) + len(c.Arguments) + 64
	}
	return n + n/8 + 96
}

// encodePrompt is encodeMessage of a prompt whose text the caller may have as a
// JSON string (quoted, nil when not): a user message of text alone is then its
// stored form with quoted as the text, a copy instead of an encoding. (A client's
// escapes may differ from encodeMessage's; the message decodes the same.)
func encodePrompt(m llm.Message, quoted jsontext.Value) (string, error) {
	if quoted == nil || m.Role != llm.RoleUser || m.Text == "" || len(m.ToolCalls) > 0 ||
		m.ToolCallID != "" || m.Name != "" || m.IsError {
		return encodeMessage(m)
	}
	const head, tail = `{"role":"user","text":`, `}`
	var b strings.Builder
	b.Grow(len(head) + len(quoted) + len(tail))
	b.WriteString(head)
	b.Write(quoted)
	b.WriteString(tail)
	return b.String(), nil
}

func decodeMessage(b []byte) (llm.Message, error) {
	var sm storedMessage
	if err := json.Unmarshal(b, &sm, codecOpts); err != nil {
		return llm.Message{}, fmt.Errorf("store: decoding a stored message: %w", err)
	}
	return fromStored(sm), nil
}

func encodeMessages(ms []llm.Message) ([]byte, error) {
	out := make([]storedMessage, len(ms)) // never nil: an empty snapshot is "[]", not "null"
	for i, m := range ms {
		out[i] = toStored(m)
	}
	b, err := json.Marshal(out, codecOpts)
	if err != nil {
		return nil, fmt.Errorf("store: encoding a snapshot: %w", err)
	}
	return b, nil
}

func decodeMessages(b []byte) ([]llm.Message, error) {
	var sms []storedMessage
	if err := json.Unmarshal(b, &sms, codecOpts); err != nil {
		return nil, fmt.Errorf("store: decoding a snapshot: %w", err)
	}
	out := make([]llm.Message, len(sms))
	for i, sm := range sms {
		out[i] = fromStored(sm)
	}
	return out, nil
}
