package provider

import "slices"

// The context builder: what the openai and anthropic kinds send a model, whatever
// the context came from (a live session, a snapshot restored after a restart, the
// checkpoints of a turn a crash interrupted).
//
// Both APIs want turns that alternate, and strict chat templates on
// OpenAI-compatible servers (vLLM, llama.cpp with Jinja templates, several open
// models) answer HTTP 400 to anything else, for every later prompt of the session
// (docs/protocol.md, "Remote providers"). A context can break the rule in a few ways:
// a turn that ended with no assistant message (a provider error, a cancel before any
// output, a crash) leaves its prompt followed by the next one; a crash can leave a
// tool call without a result; an assistant message can say nothing. alternating mends
// each.

// alternating returns msgs in a shape both APIs accept:
//
//   - it starts with a user message: assistant messages and tool results before
//     the first user message are left out;
//   - consecutive user messages are merged into one, their texts joined by a blank
//     line, so no two user messages follow each other;
//   - an assistant message with neither text nor tool calls is left out, and
//     consecutive assistant messages are merged the same way;
//   - every tool call of an assistant message is answered by a tool result right
//     after it: a result that answers no pending call is left out, and a call still
//     unanswered when the next user or assistant message comes gets an error
//     result with the text Unanswered.
//
// A tool result may be followed by a user message (a turn stopped after its tools
// ran: the step limit, a cancel between tool calls, a crash): each kind puts that
// where its API wants it. msgs is not modified.
func alternating(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	var pending []ToolCall // calls of the last assistant message still without a result
	answer := func() {
		for _, c := range pending {
			out = append(out, Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Text: Unanswered, IsError: true})
		}
		pending = nil
	}
	last := func() *Message {
		if len(out) == 0 {
			return nil
		}
		return &out[len(out)-1]
	}
	for _, m := range msgs {
		switch m.Role {
		case RoleTool:
			i := slices.IndexFunc(pending, func(c ToolCall) bool { return c.ID == m.ToolCallID })
			if i < 0 {
				continue // no call asked for it
			}
			pending = slices.Delete(pending, i, i+1)
			out = append(out, m)
		case RoleUser:
			answer()
			if l := last(); l != nil && l.Role == RoleUser {
				l.Text = joinTexts(l.Text, m.Text)
				continue
			}
			out = append(out, Message{Role: RoleUser, Text: m.Text})
		case RoleAssistant:
			if m.Text == "" && len(m.ToolCalls) == 0 {
				continue // nothing said
			}
			answer()
			l := last()
			switch {
			case l == nil:
				continue // an answer to nothing
			case l.Role == RoleAssistant: // it made no calls, or they would be answered after it
				l.Text = joinTexts(l.Text, m.Text)
				l.ToolCalls = append(slices.Clip(l.ToolCalls), m.ToolCalls...)
			default:
				out = append(out, Message{Role: RoleAssistant, Text: m.Text, ToolCalls: slices.Clip(m.ToolCalls)})
			}
			pending = append(pending, m.ToolCalls...)
		}
	}
	answer()
	return out
}

// Unanswered is the text of the tool result alternating supplies for a call whose
// result is missing.
const Unanswered = "interrupted"

// StoppedReply stands for the reply a turn never gave when it stopped after its
// tools ran, where an API needs an assistant message between those results and the
// next prompt (openai).
const StoppedReply = "(The turn stopped here, before a reply.)"

// joinTexts joins the texts of two merged messages with a blank line.
func joinTexts(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}
