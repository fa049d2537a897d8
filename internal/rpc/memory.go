package rpc

import (
	"context"
	"encoding/json/jsontext"
	"errors"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/memory"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The memory family (docs/protocol.md, "Memory"): an agent's memories of the
// caller, every owner's for an admin.

func (s *Server) memoryMethods() []methodRow {
	return []methodRow{
		{name: "memory/list", grant: auth.MemoryRead, handler: s.memoryList},
		{name: "memory/put", grant: auth.MemoryWrite, handler: s.memoryPut},
		{name: "memory/delete", grant: auth.MemoryWrite, handler: s.memoryDelete},
		{name: "memory/reindex", grant: auth.MemoryWrite, handler: s.memoryReindex},
	}
}

// memoryOff answers every memory method when the daemon has no memory service.
var memoryOff = jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "memory is not available on this daemon",
	map[string]any{"reason": "memory_off"})

// memoryAgent checks the agent a memory call names: present, configured, and one
// the caller may use.
func (s *Server) memoryAgent(ctx context.Context, alias string) error {
	if s.cfg.Memory == nil {
		return memoryOff
	}
	if alias == "" {
		return missing("agentAlias")
	}
	if err := s.cfg.Memory.CheckAgent(alias); err != nil {
		return err
	}
	if !authorityFrom(ctx).MayUseAgent(alias) {
		return agentForbidden(alias)
	}
	return nil
}

// memoryToWire maps the memory package's errors for toWire (errors.go): bad
// input is -32602 naming the field (data.param) and what is wrong with it
// (data.reason); a memory that does not exist, or that the caller may not see, is
// the same -32602 with reason not_found. Anything else (a failed write) is not
// the memory package's to map: ok is false, and it answers -32603.
func memoryToWire(err error) (wire error, ok bool) {
	var e *memory.Error
	switch {
	case errors.As(err, &e):
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, e.Msg, map[string]any{"param": e.Field, "reason": e.Reason}), true
	case errors.Is(err, memory.ErrNotFound):
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: no such memory", map[string]any{"param": "id", "reason": "not_found"}), true
	}
	return nil, false
}

type memoryListParams struct {
	AgentAlias string `json:"agentAlias"`
	Query      string `json:"query"`
	Limit      int    `json:"limit"`
	Cursor     string `json:"cursor"`
}

type memoryListResult struct {
	Memories   []memory.Memory `json:"memories"`
	NextCursor string          `json:"nextCursor,omitzero"`
}

func (s *Server) memoryList(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p memoryListParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := s.memoryAgent(ctx, p.AgentAlias); err != nil {
		return nil, err
	}
	who := c.caller()
	list, next, err := s.cfg.Memory.List(ctx, memory.ListParams{Agent: p.AgentAlias, Owner: who.Principal, Admin: who.Admin,
		Query: p.Query, Limit: p.Limit, Cursor: p.Cursor})
	if err != nil {
		return nil, err
	}
	return memoryListResult{Memories: list, NextCursor: next}, nil
}

type memoryPutParams struct {
	AgentAlias string   `json:"agentAlias"`
	Content    string   `json:"content"`
	Key        string   `json:"key"`
	Tags       []string `json:"tags"`
}

type memoryIDResult struct {
	ID string `json:"id"`
}

func (s *Server) memoryPut(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p memoryPutParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := s.memoryAgent(ctx, p.AgentAlias); err != nil {
		return nil, err
	}
	m, err := s.cfg.Memory.Put(ctx, memory.PutParams{Agent: p.AgentAlias, Owner: c.caller().Principal,
		Content: p.Content, Key: p.Key, Tags: p.Tags})
	if err != nil {
		return nil, err
	}
	return memoryIDResult{ID: m.ID}, nil
}

type memoryDeleteParams struct {
	ID string `json:"id"`
}

func (s *Server) memoryDelete(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p memoryDeleteParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if s.cfg.Memory == nil {
		return nil, memoryOff
	}
	if p.ID == "" {
		return nil, missing("id")
	}
	who := c.caller()
	if err := s.cfg.Memory.Delete(ctx, p.ID, who.Principal, who.Admin); err != nil {
		return nil, err
	}
	return memoryIDResult{ID: p.ID}, nil
}

type memoryReindexParams struct {
	AgentAlias string `json:"agentAlias"`
	// ProgressToken, when given, is echoed in each $/progress notification.
	ProgressToken jsontext.Value `json:"progressToken"`
}

// progressParams are the params of a $/progress notification.
type progressParams struct {
	Method        string         `json:"method"`
	ProgressToken jsontext.Value `json:"progressToken,omitzero"`
	Progress      int            `json:"progress"`
	Total         int            `json:"total"`
}

// memoryReindex embeds the agent's memories that lack an embedding, every
// owner's: a reindex fills in what the endpoint failed to give, whoever stored it.
// After each batch it sends the caller $/progress; the answer comes after the last.
func (s *Server) memoryReindex(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p memoryReindexParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := s.memoryAgent(ctx, p.AgentAlias); err != nil {
		return nil, err
	}
	r, err := s.cfg.Memory.Reindex(ctx, p.AgentAlias, func(done, total int) {
		c.conn.Notify("$/progress", progressParams{Method: "memory/reindex", ProgressToken: p.ProgressToken, Progress: done, Total: total})
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
