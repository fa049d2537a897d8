package tool

import (
	"context"
	"encoding/json/jsontext"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// AskUser is the ask_user tool: a question put to the user through an attached
// client (elicitation/create), optionally with choices. When nobody answers (no
// capable client, a decline, a cancel, a timeout) the model gets "no answer", which
// is an outcome to reason about rather than an error. A client that answers with an
// error object fails the call (isError).
type AskUser struct{}

// NoAnswer is ask_user's output when the user did not answer.
const NoAnswer = "no answer"

func (AskUser) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameAskUser,
		Description: "Ask the user a question and wait for the answer. Give choices when the " +
			"answer is one of a few options. Returns the user's answer, or \"no answer\" when " +
			"the user did not answer.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "question": {"type": "string", "description": "The question to ask."},
    "choices": {"type": "array", "items": {"type": "string"}, "description": "Optional answers for the user to choose from."}
  },
  "required": ["question"]
}`),
	}
}

func (AskUser) Mutates() bool { return false }

func (AskUser) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	if strings.TrimSpace(a.Question) == "" {
		return failure("invalid arguments: question is required")
	}
	if env.Asker == nil {
		return Result{Output: NoAnswer}
	}
	answer, ok, err := env.Asker.Ask(ctx, a.Question, a.Choices)
	if err != nil {
		return failure("ask_user failed: %v", err)
	}
	if !ok {
		return Result{Output: NoAnswer}
	}
	return Result{Output: answer}
}
