package provider

import (
	"crypto/sha256"
	"strconv"
)

// Tool-call ids on the wire (docs/protocol.md, "Remote providers"). The daemon knows
// a call by a session-unique id of its own (ToolCall.ID, docs/protocol.md,
// "session/update"); a model must be sent back the id it
// produced (ToolCall.ProviderID), since some servers check it: Mistral's API and
// vLLM's Mistral templates refuse any id that is not 9 characters of [a-zA-Z0-9].
// Where there is no such id (the provider gave none, the message comes from rows
// stored before providers' ids were kept, or the id is one an API would refuse) or
// the id is already in the context (servers that number their calls call_0 in
// every answer), the context gets an id made here instead: 9 characters of
// [a-zA-Z0-9], which every API accepts, unique in the context, and the same in the
// call and its result.

// WireIDLen is the length of the ids wireIDs makes.
const WireIDLen = 9

// wireIDs returns msgs, a context as alternating returns it (every tool result
// right after the assistant message whose call it answers), with each call's ID and
// its result's ToolCallID replaced by the id the model is sent. A provider's id is
// kept where it is the first of its value in the context and valid accepts it (nil
// accepts any); every other call gets a made id (MakeWireID), distinct from every
// id of the context. The same context always gets the same ids, so a prompt cache
// sees the same prefix on every call. msgs is not modified.
func wireIDs(msgs []Message, valid func(string) bool) []Message {
	used := map[string]bool{}
	kept := map[[2]int]bool{} // {message, call} whose provider id is kept
	for i, m := range msgs {
		for j, c := range m.ToolCalls {
			id := c.ProviderID
			if id == "" || used[id] || (valid != nil && !valid(id)) {
				continue
			}
			used[id] = true
			kept[[2]int{i, j}] = true
		}
	}
	out := make([]Message, len(msgs))
	var wire map[string]string // the ids of the calls of the last assistant message
	for i, m := range msgs {
		switch {
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			calls := make([]ToolCall, len(m.ToolCalls))
			wire = make(map[string]string, len(calls))
			for j, c := range m.ToolCalls {
				id := c.ProviderID
				if !kept[[2]int{i, j}] {
					for n := 0; ; n++ {
						if id = MakeWireID(c.ID, n); !used[id] {
							break
						}
					}
					used[id] = true
				}
				if _, dup := wire[c.ID]; !dup {
					wire[c.ID] = id
				}
				c.ID = id
				calls[j] = c
			}
			m.ToolCalls = calls
		case m.Role == RoleTool:
			if id, ok := wire[m.ToolCallID]; ok {
				m.ToolCallID = id
			}
		default:
			wire = nil
		}
		out[i] = m
	}
	return out
}

// wireAlphabet is what a made id is spelled with.
const wireAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// MakeWireID is the n-th candidate id for the call the daemon knows as seed:
// WireIDLen characters of [a-zA-Z0-9], derived from both, so that a context gets
// the same ids each time it is sent.
func MakeWireID(seed string, n int) string {
	sum := sha256.Sum256([]byte(seed + "\x00" + strconv.Itoa(n)))
	b := make([]byte, WireIDLen)
	for i := range b {
		b[i] = wireAlphabet[int(sum[i])%len(wireAlphabet)]
	}
	return string(b)
}

// IsWireID reports whether id follows Mistral's rule: WireIDLen characters of
// [a-zA-Z0-9].
func IsWireID(id string) bool {
	if len(id) != WireIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isAlnum(id[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// anthropicID reports whether id suits the Messages API's tool_use ids:
// ^[a-zA-Z0-9_-]+$, at most 64 characters.
func anthropicID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
