package acp

import (
	"context"
	"encoding/json/jsontext"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// initialize answers the editor's initialize: the protocol version, what the
// bridge offers, and what the editor declared (form elicitation, thoughts) kept
// for the session's life.
func (b *Bridge) initialize(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	var p struct {
		ProtocolVersion    *int64 `json:"protocolVersion"`
		ClientCapabilities struct {
			Elicitation *struct {
				Form jsontext.Value `json:"form"`
			} `json:"elicitation"`
			Meta map[string]jsontext.Value `json:"_meta"`
		} `json:"clientCapabilities"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil || *p.ProtocolVersion < 1 {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: protocolVersion must be an integer of at least 1",
			map[string]any{"param": "protocolVersion", "supported": []int{ProtocolVersion}})
	}
	e := p.ClientCapabilities.Elicitation
	b.mu.Lock()
	b.elicit = e != nil && len(e.Form) > 0 && string(e.Form) != "null"
	b.thoughts = string(p.ClientCapabilities.Meta[ThoughtsMeta]) == "true"
	b.mu.Unlock()
	if _, err := b.daemon(ctx); err != nil {
		return nil, err
	}
	return map[string]any{
		"protocolVersion": ProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession":        true,
			"promptCapabilities": map[string]any{"image": true, "audio": false, "embeddedContext": true},
			"mcpCapabilities":    map[string]any{"http": true, "sse": true},
			"sessionCapabilities": map[string]any{
				"list": map[string]any{}, "resume": map[string]any{}, "close": map[string]any{}, "delete": map[string]any{},
			},
		},
		"authMethods": []any{},
		"agentInfo":   map[string]any{"name": "zeroclaw", "title": "ZeroClaw", "version": b.opts.Version},
	}, nil
}
