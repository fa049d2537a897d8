package tui

import (
	"context"
	"encoding/json/jsontext"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// historyRows is how many rows of the visible transcript a session with nothing to
// replay shows (the newest).
const historyRows = 1000

// loadTranscript reads the newest rows of a session's visible transcript
// (session/messages). A session that has rows but no updates to replay (a fork: its
// seqs start at 1 with a copy of the transcript) is shown from them.
func loadTranscript(ctx context.Context, b Backend, sid string) ([]client.Message, error) {
	var r struct {
		Messages []client.Message `json:"messages"`
		Total    int              `json:"total"`
	}
	if err := b.Call(ctx, "session/messages", map[string]any{"sessionId": sid, "limit": historyRows}, &r); err != nil {
		return nil, err
	}
	return r.Messages, nil
}

// historyBlocks turns transcript rows into blocks: prompts, replies, tool cards with
// their results, and interruption markers as notices.
func historyBlocks(rows []client.Message) (blocks []*block, cards map[string]*block) {
	cards = map[string]*block{}
	add := func(b *block) *block {
		b.dirty = true
		blocks = append(blocks, b)
		return b
	}
	for _, r := range rows {
		switch r.Role {
		case client.RoleUser:
			add(&block{kind: blockUser}).text.WriteString(r.Text)
		case client.RoleAssistant:
			if r.Text != "" {
				add(&block{kind: blockAssistant}).text.WriteString(r.Text)
			}
		case client.RoleToolCall:
			args := jsontext.Value(r.Text)
			if !args.IsValid() {
				args = nil
			}
			cards[r.ToolCallID] = add(&block{kind: blockTool, tool: &toolCard{id: r.ToolCallID, name: r.Name, args: args, state: toolCancelled}})
		case client.RoleToolResult:
			b := cards[r.ToolCallID]
			if b == nil {
				b = add(&block{kind: blockTool, tool: &toolCard{id: r.ToolCallID, name: r.Name}})
				cards[r.ToolCallID] = b
			}
			c := b.tool
			c.output, c.state = r.Text, toolDone
			if r.IsError {
				c.state = toolFailed
				if isCancelledOutput(r.Text) {
					c.state = toolCancelled
				}
			}
		case client.RoleMarker:
			add(&block{kind: blockNotice}).text.WriteString(r.Text)
		}
	}
	return blocks, cards
}
