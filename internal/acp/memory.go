package acp

import (
	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/chat"
)

// ThoughtsMeta is the member of initialize's clientCapabilities._meta by which an
// editor asks for the daemon's own thoughts: with it true, what a turn recalled
// from memory reaches the editor as one agent_thought_chunk "recalled: …"
// (docs/protocol.md, "Memory"); without it, nothing does.
const ThoughtsMeta = "zeroclaw.dev/thoughts"

// recalled forwards a memory_recalled update to an editor that asked for thoughts.
func (b *Bridge) recalled(sid string, u client.Update) {
	b.mu.Lock()
	want := b.thoughts
	b.mu.Unlock()
	if !want {
		return
	}
	b.notify(sid, contentChunk{SessionUpdate: "agent_thought_chunk", Content: text(chat.RecalledLine(client.Recalled(u)) + "\n")})
}
