package memory

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// Names of the memory tools.
const (
	NameStore  = "memory_store"
	NameRecall = "memory_recall"
	NameForget = "memory_forget"
)

// Tools returns the memory tools of a session of agent owned by owner: they see
// and change that owner's memories of that agent only. memory_store and
// memory_forget change things (approval under supervised, refused under
// readonly, as write_file); memory_recall only reads.
func (s *Service) Tools(agent, owner string) map[string]tool.Tool {
	b := bound{s: s, agent: agent, owner: owner}
	return map[string]tool.Tool{NameStore: storeTool{b}, NameRecall: recallTool{b}, NameForget: forgetTool{b}}
}

type bound struct {
	s            *Service
	agent, owner string
}

type storeTool struct{ bound }
type recallTool struct{ bound }
type forgetTool struct{ bound }

func (storeTool) Mutates() bool  { return true }
func (recallTool) Mutates() bool { return false }
func (forgetTool) Mutates() bool { return true }

func (storeTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameStore,
		Description: "Remember a fact for later sessions of this agent. With a key, a memory stored " +
			"before under the same key is replaced. Content is at most 8000 characters.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "content": {"type": "string", "description": "What to remember."},
    "key": {"type": "string", "description": "A short name for the memory; storing under it again replaces it."},
    "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags: letters, digits, _ . : / -"}
  },
  "required": ["content"]
}`),
	}
}

func (recallTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        NameRecall,
		Description: "Search the memories of this agent by keywords (and meaning, where embeddings are on): the best matches with their ids and scores.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What to look for."},
    "limit": {"type": "integer", "description": "How many memories at most (default 5, at most 50)."}
  },
  "required": ["query"]
}`),
	}
}

func (forgetTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        NameForget,
		Description: "Forget the memory with the given id (as memory_recall shows it).",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {"id": {"type": "string", "description": "The memory's id."}},
  "required": ["id"]
}`),
	}
}

func decode(args jsontext.Value, v any) error {
	if len(args) == 0 {
		args = jsontext.Value("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

func fail(err error) tool.Result {
	var e *Error
	if errors.As(err, &e) {
		return tool.Result{Output: strings.TrimPrefix(e.Msg, "invalid params: "), IsError: true}
	}
	return tool.Result{Output: err.Error(), IsError: true}
}

func (t storeTool) Run(ctx context.Context, env tool.Env, args jsontext.Value) tool.Result {
	var a struct {
		Content string   `json:"content"`
		Key     string   `json:"key"`
		Tags    []string `json:"tags"`
	}
	if err := decode(args, &a); err != nil {
		return tool.Result{Output: err.Error(), IsError: true}
	}
	m, err := t.s.Put(ctx, PutParams{Agent: t.agent, Owner: t.owner, Content: a.Content, Key: a.Key, Tags: a.Tags})
	if err != nil {
		return fail(err)
	}
	return tool.Result{Output: "stored " + m.ID}
}

func (t recallTool) Run(ctx context.Context, env tool.Env, args jsontext.Value) tool.Result {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := decode(args, &a); err != nil {
		return tool.Result{Output: err.Error(), IsError: true}
	}
	if strings.TrimSpace(a.Query) == "" {
		return tool.Result{Output: "query is empty", IsError: true}
	}
	limit := a.Limit
	if limit <= 0 {
		limit = t.s.conf().Memory.Limit()
	}
	found, err := t.s.Search(ctx, t.agent, t.owner, a.Query, min(limit, 50))
	if err != nil {
		return fail(err)
	}
	if len(found) == 0 {
		return tool.Result{Output: "no memory matches"}
	}
	var b strings.Builder
	for _, f := range found {
		fmt.Fprintf(&b, "%s (score %.2f", f.ID, f.Score)
		if f.Key != "" {
			fmt.Fprintf(&b, ", key %s", f.Key)
		}
		fmt.Fprintf(&b, "): %s\n", cut(f.Content, RecallEach))
	}
	return tool.Result{Output: b.String()}
}

func (t forgetTool) Run(ctx context.Context, env tool.Env, args jsontext.Value) tool.Result {
	var a struct {
		ID string `json:"id"`
	}
	if err := decode(args, &a); err != nil {
		return tool.Result{Output: err.Error(), IsError: true}
	}
	if err := t.s.Delete(ctx, a.ID, t.owner, false); err != nil {
		if errors.Is(err, ErrNotFound) {
			return tool.Result{Output: "no memory " + a.ID, IsError: true}
		}
		return fail(err)
	}
	return tool.Result{Output: "forgot " + a.ID}
}
