package tui

import (
	"context"
	"encoding/json/jsontext"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// historyRows is how many rows of the visible transcript are shown of what the
// replay lacks (the newest of them).
const historyRows = 1000

// replaySeen is what an attach's replay held: its updates and the text of its first
// prompt (user_message). The client hands every replayed update over before Attach
// returns; the mutex is for the goroutine it does so on.
type replaySeen struct {
	mu        sync.Mutex
	updates   int
	prompts   int
	firstText string
}

func (r *replaySeen) wrap(push func(client.Update)) func(client.Update) {
	return func(u client.Update) {
		r.mu.Lock()
		r.updates++
		if u.Type == client.UserMessage {
			if r.prompts == 0 {
				r.firstText = u.Text
			}
			r.prompts++
		}
		r.mu.Unlock()
		push(u)
	}
}

// rowsPage is one page of session/messages: rows with index < before (all when
// before < 0), the newest limit of them.
func rowsPage(ctx context.Context, b Backend, sid string, before, limit int) ([]client.Message, error) {
	params := map[string]any{"sessionId": sid, "limit": limit}
	if before >= 0 {
		params["before"] = before
	}
	var r struct {
		Messages []client.Message `json:"messages"`
	}
	if err := b.Call(ctx, "session/messages", params, &r); err != nil {
		return nil, err
	}
	return r.Messages, nil
}

// missingRows reads the rows of the visible transcript that the replay lacks: those
// before the first prompt it replayed. A replay whose first prompt is the
// transcript's first row lacks none (one row read); a fork, whose copied rows have no
// updates (its seqs start at 1), or a replay the daemon cut short, lacks the older
// rows; of them the newest historyRows are read.
func missingRows(ctx context.Context, b Backend, sid string, seen *replaySeen, truncated bool) ([]client.Message, error) {
	seen.mu.Lock()
	prompts, firstText := seen.prompts, seen.firstText
	seen.mu.Unlock()
	if !truncated && prompts > 0 {
		first, err := rowsPage(ctx, b, sid, 1, 1)
		if err != nil {
			return nil, err
		}
		if len(first) == 0 || first[0].Role == client.RoleUser && first[0].Text == firstText {
			return nil, nil
		}
	}
	// Find the row of the first replayed prompt: the prompts-th user row from the end.
	before := -1
	for found := 0; found < prompts; {
		page, err := rowsPage(ctx, b, sid, before, 200)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return nil, nil // fewer prompts in the transcript than replayed: none lacks
		}
		for i := len(page) - 1; i >= 0 && found < prompts; i-- {
			if page[i].Role == client.RoleUser {
				found++
				before = page[i].Index
			}
		}
		if found < prompts {
			before = page[0].Index
			if before == 0 {
				return nil, nil
			}
		}
	}
	if before == 0 {
		return nil, nil
	}
	return rowsPage(ctx, b, sid, before, historyRows)
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
