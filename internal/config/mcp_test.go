package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMCPServersRoundTripAndMaskTheirSecrets(t *testing.T) {
	dir := t.TempDir()
	l := NewLive(Default(), LiveOptions{Dir: dir})
	err := l.Apply(context.Background(), entries(
		"mcp.servers.fs.command", `"node"`,
		"mcp.servers.fs.args", `["server.js","/tmp"]`,
		"mcp.servers.fs.env.TOKEN", `"s3cret"`,
		"mcp.servers.web.url", `"http://127.0.0.1:3001/mcp"`,
		"mcp.servers.web.headers.Authorization", `"Bearer xyz"`,
		"mcp.servers.web.enabled", `false`,
		"mcp.servers.web.call_timeout_secs", `5`,
		"agents.default.mcp_servers", `[]`,
		"agents.other.provider", `"echo"`,
		"agents.other.mcp_servers", `["web","fs"]`,
	))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded, l.Current()) {
		t.Fatalf("Load = %s\nlive = %s", loaded.MaskedJSON(), l.Current().MaskedJSON())
	}
	c := loaded
	if c.MCP.Servers["fs"].Env["TOKEN"] != "s3cret" || c.MCP.Servers["web"].IsEnabled() || c.MCP.Servers["web"].CallTimeout() != 5 {
		t.Fatalf("loaded %s", c.MaskedJSON())
	}
	// [] is none, absent is every enabled one, a list is those of it that are enabled.
	if got := c.MCPServerNames("default"); len(got) != 0 {
		t.Errorf("default uses %v, want none", got)
	}
	if got := c.MCPServerNames("other"); !reflect.DeepEqual(got, []string{"fs"}) {
		t.Errorf("other uses %v, want [fs] (web is disabled)", got)
	}
	c.Agents["default"] = Agent{Provider: "echo"}
	if got := c.MCPServerNames("default"); !reflect.DeepEqual(got, []string{"fs"}) {
		t.Errorf("an agent without mcp_servers uses %v, want every enabled server", got)
	}
	for _, prop := range []string{"mcp.servers.fs.env.TOKEN", "mcp.servers.fs.env", "mcp.servers.web.headers", "mcp.servers", "mcp"} {
		v, err := loaded.Get(prop)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(v), "s3cret") || strings.Contains(string(v), "Bearer") {
			t.Errorf("Get(%s) = %s: a secret shows", prop, v)
		}
	}
	if s := loaded.String(); strings.Contains(s, "s3cret") || strings.Contains(s, "Bearer") || !strings.Contains(s, `"TOKEN":"***"`) {
		t.Errorf("masked config = %s", s)
	}
}

func TestBadMCPConfigIsRefusedWithItsIndex(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []Entry
		index   int
		want    string
	}{
		{"bad name", entries("rpc.replay_events", `5`, "mcp.servers.Bad.command", `"x"`), 1, "lowercase"},
		{"neither", entries("mcp.servers.a.cwd", `"/tmp"`), 0, "needs command"},
		{"both", entries("mcp.servers.a.command", `"x"`, "mcp.servers.a.url", `"http://h/"`), 1, "both"},
		{"bad url", entries("mcp.servers.a.url", `"ftp://h/"`), 0, "http"},
		{"relative cwd", entries("mcp.servers.a.command", `"x"`, "mcp.servers.a.cwd", `"rel"`), 1, "absolute"},
		{"headers on stdio", entries("mcp.servers.a.command", `"x"`, "mcp.servers.a.headers.X", `"y"`), 1, "HTTP"},
		{"bad env name", entries("mcp.servers.a.command", `"x"`, "mcp.servers.a.env.1X", `"y"`), 1, "environment"},
		{"timeout out of range", entries("mcp.servers.a.command", `"x"`, "mcp.servers.a.startup_timeout_secs", `100000`), 1, "between"},
		{"unknown server of an agent", entries("mcp.servers.a.command", `"x"`, "agents.default.mcp_servers", `["a","b"]`), 1, `"b"`},
		{"client tool timeout", entries("rpc.client_tool_timeout_secs", `0`), 0, "between"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := NewLive(Default(), LiveOptions{Dir: dir})
			if err := l.Apply(context.Background(), entries("mcp.servers.ok.command", `"true"`)); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(dir, FileName))
			live := l.Current()
			err := l.Apply(context.Background(), tt.entries)
			var ee *EntryError
			if !errors.As(err, &ee) || ee.Index != tt.index || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want index %d mentioning %q", err, tt.index, tt.want)
			}
			after, _ := os.ReadFile(filepath.Join(dir, FileName))
			if string(after) != string(before) || !reflect.DeepEqual(l.Current(), live) {
				t.Error("the file or the live config changed")
			}
		})
	}
}
