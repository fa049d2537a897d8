package mcp

import (
	"context"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"time"

	sdkrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// Tool is one tool of an MCP server as the agent sees it.
type Tool struct {
	srv      *server
	remote   string // the server's name of it
	spec     llm.ToolSpec
	readOnly bool
}

func newTool(s *server, n *namer, t *sdk.Tool) (*Tool, error) {
	schema, ok := t.InputSchema.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("its inputSchema is not a JSON object (%T)", t.InputSchema)
	}
	if typ, has := schema["type"]; has && typ != "object" {
		return nil, fmt.Errorf("its inputSchema has type %v, not \"object\"", typ)
	}
	if _, has := schema["type"]; !has {
		schema["type"] = "object"
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("its inputSchema cannot be encoded: %w", err)
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	return &Tool{
		srv: s, remote: t.Name,
		spec:     llm.ToolSpec{Name: n.name(t.Name), Description: desc, Parameters: jsontext.Value(b)},
		readOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint,
	}, nil
}

func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// Mutates: a tool the server marks readOnlyHint is treated like read_file, every
// other one like shell.
func (t *Tool) Mutates() bool { return !t.readOnly }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.srv.spec.Name }

// Run calls the tool on its server, starting (or restarting) the server if need
// be. Whatever goes wrong gives this call an error result naming the server.
func (t *Tool) Run(ctx context.Context, env tool.Env, args jsontext.Value) tool.Result {
	return t.srv.call(ctx, env, t.spec.Name, t.remote, args)
}

func (s *server) fail(format string, a ...any) tool.Result {
	return tool.Result{Output: fmt.Sprintf("MCP server %s: ", s.spec.Name) + fmt.Sprintf(format, a...), IsError: true}
}

func (s *server) call(ctx context.Context, env tool.Env, model, remote string, args jsontext.Value) tool.Result {
	timeout := s.spec.callTimeout()
	startCtx, cancel := context.WithTimeout(ctx, s.spec.startupTimeout()+timeSlack)
	cs, gen, proc, err := s.ensureGen(startCtx, true)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{Output: "cancelled", IsError: true}
		}
		return s.fail("%v", err)
	}
	if len(args) == 0 {
		args = jsontext.Value("{}")
	}
	var report func(tool.Progress)
	if env.Progress != nil {
		id := env.CallID
		report = func(p tool.Progress) { env.Progress(id, p) }
	}
	token, unwatch := s.watchProgress(report)
	defer unwatch()
	callCtx, cancelCall := context.WithTimeout(ctx, timeout)
	defer cancelCall()
	params := &sdk.CallToolParams{Name: remote, Arguments: json.RawMessage(args)}
	params.SetProgressToken(token)
	res, err := cs.CallTool(callCtx, params) // a cancelled ctx sends notifications/cancelled
	switch {
	case err == nil:
		return mapResult(res)
	case ctx.Err() != nil:
		return tool.Result{Output: "cancelled", IsError: true}
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return s.fail("%s timed out after %s", model, secs(timeout))
	}
	var werr *sdkrpc.Error
	if errors.As(err, &werr) {
		return s.fail("%s failed: %s", model, werr.Message)
	}
	gone := errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if !gone && (proc == nil || !exited(proc, 0)) {
		return s.fail("%s failed: %v", model, err) // the server lives on
	}
	// The connection ended: say why the server went (a stdio server's exit status),
	// and mark it dead, so that the next call restarts it.
	reason := err.Error()
	if proc != nil && exited(proc, 2*time.Second) {
		reason = proc.status
	}
	s.died(gen, reason)
	cs.Close() // the watcher (run) then ends the process, if it still runs
	return s.fail("%s", reason)
}
