package main

import (
	"encoding/json/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The README's editor settings: each JSON snippet parses, names zeroclaw acp, and
// the command it gives starts an ACP agent that answers initialize; the Lua snippet
// is balanced and starts the same command.

func TestReadmeEditorSettingsStartTheBridge(t *testing.T) {
	var servers int
	for _, b := range readmeBlocks(t, "json") {
		var settings struct {
			AgentServers map[string]struct {
				Type    string            `json:"type"`
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"agent_servers"`
		}
		if err := json.Unmarshal([]byte(b), &settings, json.RejectUnknownMembers(false)); err != nil {
			if strings.Contains(b, "agent_servers") {
				t.Errorf("README JSON snippet does not parse: %v\n%s", err, b)
			}
			continue
		}
		for name, s := range settings.AgentServers {
			servers++
			if s.Command != "zeroclaw" || len(s.Args) == 0 || s.Args[0] != "acp" || s.Env == nil {
				t.Errorf("agent server %s = %+v, want command zeroclaw, args starting with acp, env", name, s)
				continue
			}
			if s.Type != "" && s.Type != "custom" {
				t.Errorf("agent server %s: type %q", name, s.Type)
			}
			answersInitialize(t, s.Args)
		}
	}
	if servers != 2 {
		t.Errorf("found %d agent_servers entries in README.md, want Zed's and JetBrains'", servers)
	}

	lua := readmeBlocks(t, "lua")
	if len(lua) != 1 {
		t.Fatalf("want one lua snippet (CodeCompanion), found %d", len(lua))
	}
	if err := balanced(lua[0]); err != "" {
		t.Errorf("the Lua snippet is not well formed: %s\n%s", err, lua[0])
	}
	for _, want := range []string{`require("codecompanion").setup({`, `acp = {`, `require("codecompanion.adapters").extend(`, `default = { "zeroclaw", "acp" }`, `adapter = "zeroclaw"`} {
		if !strings.Contains(lua[0], want) {
			t.Errorf("the Lua snippet lacks %s", want)
		}
	}
}

// answersInitialize runs the built zeroclaw with args and one initialize line on
// stdin, and wants its answer and exit status 0.
func answersInitialize(t *testing.T, args []string) {
	t.Helper()
	h := home(t)
	cmd := command(h, args...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("zeroclaw %v did not exit after its input ended", args)
	}
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("zeroclaw %v: %v\n%s", args, err, stderr)
	}
	var res struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion int `json:"protocolVersion"`
			AgentInfo       struct {
				Name string `json:"name"`
			} `json:"agentInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &res, json.RejectUnknownMembers(false)); err != nil || res.ID != 1 ||
		res.Result.ProtocolVersion != 1 || res.Result.AgentInfo.Name != "zeroclaw" {
		t.Errorf("zeroclaw %v answered %q (%v)", args, out, err)
	}
}

// balanced checks brackets and string quotes of a Lua snippet; "" when fine.
func balanced(src string) string {
	var stack []rune
	pairs := map[rune]rune{')': '(', '}': '{', ']': '['}
	for i := 0; i < len(src); i++ {
		c := rune(src[i])
		switch c {
		case '"', '\'':
			j := i + 1
			for j < len(src) && rune(src[j]) != c {
				if src[j] == '\\' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					return "a string runs past the end of its line"
				}
				j++
			}
			if j >= len(src) {
				return "an unterminated string"
			}
			i = j
		case '-':
			if strings.HasPrefix(src[i:], "--") {
				if k := strings.IndexByte(src[i:], '\n'); k >= 0 {
					i += k
				} else {
					i = len(src)
				}
			}
		case '(', '{', '[':
			stack = append(stack, c)
		case ')', '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return "a closing " + string(c) + " without its opening"
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return "unclosed " + string(stack)
	}
	if n := strings.Count(src, "function("); n != strings.Count(src, "end,")+strings.Count(src, "end\n") {
		return "function and end do not pair up"
	}
	return ""
}
