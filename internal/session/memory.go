package session

import (
	"context"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/memory"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// Memory is the agents' memories (internal/memory's Service), as a session uses
// them: the memory tools of its agent and owner, and the recall of each turn.
type Memory interface {
	Enabled() bool
	Tools(agent, owner string) map[string]tool.Tool
	Recall(ctx context.Context, agent, owner, message string) (memory.Recalled, error)
}

// RecallTimeout bounds a turn's recall: a slow embeddings endpoint delays the
// first model call by at most this, and the turn then goes on without memories.
const RecallTimeout = 10 * time.Second

// memoryTools are the memory tools of the session (nil when memory is off).
func (s *Session) memoryTools() map[string]tool.Tool {
	m := s.mgr.opts.Memory
	if m == nil || !m.Enabled() {
		return nil
	}
	all := m.Tools(s.Agent.Alias, s.Owner)
	if s.Agent.MemoryTools != nil {
		for name := range all {
			if !s.Agent.MemoryTools[name] {
				delete(all, name)
			}
		}
	}
	return all
}

// splitMemoryTools takes the memory tools out of an agent's `tools` list: the
// built-in names go to tool.Select, the memory ones (nil when the list is empty:
// every one) to the session.
func splitMemoryTools(list []string) (builtin []string, memoryTools map[string]bool) {
	if len(list) == 0 {
		return nil, nil
	}
	memoryTools = map[string]bool{}
	for _, name := range list {
		switch name {
		case memory.NameStore, memory.NameRecall, memory.NameForget:
			memoryTools[name] = true
		default:
			builtin = append(builtin, name)
		}
	}
	return builtin, memoryTools
}

// selectTools is tool.Select of the built-in names of list; a list of memory
// tools only selects no built-in tool (tool.Select takes none for all).
func selectTools(list, builtin []string) ([]tool.Tool, error) {
	if len(list) > 0 && len(builtin) == 0 {
		return nil, nil
	}
	return tool.Select(builtin)
}

// addMemoryTools adds the memory tools to a turn's tool set, under names no other
// tool took.
func (s *Session) addMemoryTools(all map[string]tool.Tool) {
	for name, t := range s.memoryTools() {
		if _, taken := all[name]; !taken {
			all[name] = t
		}
	}
}

// recall returns the agent loop's recall of turn t (nil when memory is off): it
// searches the owner's memories of the agent with the user's message and returns
// the block to put in front of that message in the provider request only (the
// transcript, the checkpoints and the retained context keep the message as the
// user wrote it). What it recalled is published as memory_recalled, kept for
// replay; nothing recalled publishes nothing. A failed recall is logged and the
// turn goes on without it (docs/protocol.md, "Memory").
func (s *Session) recall(t *runningTurn, message string) func(ctx context.Context) string {
	m := s.mgr.opts.Memory
	if m == nil || !m.Enabled() {
		return nil
	}
	return func(ctx context.Context) string {
		ctx, cancel := context.WithTimeout(ctx, RecallTimeout)
		defer cancel()
		r, err := m.Recall(ctx, s.Agent.Alias, s.Owner, message)
		if err != nil {
			s.mgr.log.Warn("recalling memories failed; the turn goes on without them", "session", s.ID, "turn", t.id, "err", err)
			return ""
		}
		if len(r.Entries) == 0 {
			return ""
		}
		s.publish(&Update{TurnID: t.id, Type: MemoryRecalled, Recalled: r.Entries})
		return r.Prefix
	}
}
