package acp

import (
	"context"
	"encoding/json/v2"
	"errors"
	"strconv"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/mcp"
)

// An editor's MCP server may have the name of one of the agent's own MCP servers
// (both configured with the same filesystem server is common). The daemon refuses
// client tools in another server's names (tool_name_clash, with the server in its
// data); the session still opens (docs/protocol.md, "ACP": session/new succeeds): the
// editor's server serves its tools under a name of its own, <name>-editor (then
// -editor2, …).

// maxRenames bounds the retries of one session/new: one per clashing server.
const maxRenames = 8

// newSession is d.NewSession with es's tools as the session's client tools,
// renaming an editor server whose names the daemon says clash with its own.
func (b *Bridge) newSession(ctx context.Context, d *client.Client, np client.NewSessionParams, es *editorServers) (*client.Session, error) {
	if es != nil {
		np.ClientTools = es.defs
	}
	for i := 0; ; i++ {
		s, err := d.NewSession(ctx, np)
		srv := clashingServer(err)
		if es == nil || srv == "" || i == maxRenames {
			return s, err
		}
		to, ok := es.rename(srv)
		if !ok {
			return s, err
		}
		b.log.Warn("an MCP server of the editor has the name of one of the agent's; its tools are served under another", "server", srv, "as", to)
		np.ClientTools = es.defs
	}
}

// clashingServer is the daemon's MCP server whose names err says a client tool
// took, or "".
func clashingServer(err error) string {
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeInvalidParams || e.Reason() != "tool_name_clash" {
		return ""
	}
	var d struct {
		Server string `json:"server"`
	}
	json.Unmarshal(e.Data, &d, json.RejectUnknownMembers(false))
	return d.Server
}

// rename gives the tools named <server>__… a prefix no tool of es has, and reports
// it; false when none of es's tools is in server's names.
func (es *editorServers) rename(server string) (string, bool) {
	old := server + "__"
	prefixes := map[string]bool{}
	found := false
	for _, d := range es.defs {
		p, _ := mcp.ServerOf(d.Name)
		prefixes[p] = true
		found = found || strings.HasPrefix(d.Name, old)
	}
	if !found {
		return "", false
	}
	to := server + "-editor"
	for n := 2; prefixes[to]; n++ {
		to = server + "-editor" + strconv.Itoa(n)
	}
	taken := map[string]bool{}
	for _, d := range es.defs {
		taken[d.Name] = true
	}
	for i, d := range es.defs {
		rest, ok := strings.CutPrefix(d.Name, old)
		if !ok {
			continue
		}
		name := to + "__" + rest
		if len(name) > mcp.MaxToolName {
			name = name[:mcp.MaxToolName]
		}
		for n := 2; taken[name]; n++ {
			suffix := "_" + strconv.Itoa(n)
			name = name[:min(len(name), mcp.MaxToolName-len(suffix))] + suffix
		}
		taken[name] = true
		es.tools[name] = es.tools[d.Name]
		delete(es.tools, d.Name)
		es.defs[i].Name = name
	}
	return to, true
}
