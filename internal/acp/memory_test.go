//go:build unix

package acp

import (
	"bufio"
	"encoding/json/v2"
	"net"
	"strings"
	"testing"
	"time"
)

// framesUntil reads the bridge's frames until the answer to id and returns them all.
func (r *rawBridge) framesUntil(id int) []string {
	r.t.Helper()
	var out []string
	for {
		line := r.next()
		out = append(out, string(line))
		var m map[string]any
		if json.Unmarshal(line, &m) == nil {
			if _, isReq := m["method"]; !isReq && m["id"] == float64(id) {
				return out
			}
		}
	}
}

// putMemory stores a memory of agent "full" over the daemon's socket.
func putMemory(t *testing.T, sock, content, key string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	params, _ := json.Marshal(map[string]string{"agentAlias": "full", "content": content, "key": key})
	for i, line := range []string{
		`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}`,
		`{"jsonrpc":"2.0","method":"memory/put","params":` + string(params) + `,"id":2}`,
	} {
		c.Write([]byte(line + "\n"))
		answer, err := r.ReadString('\n')
		if err != nil || !strings.Contains(answer, `"result"`) {
			t.Fatalf("call %d: %v %s", i+1, err, answer)
		}
	}
}

func TestRecalledMemoriesAreAThoughtOnlyForEditorsThatAskForThoughts(t *testing.T) {
	sock := runDaemon(t)
	putMemory(t, sock, "The staging host is build-3", "staging")
	for _, asks := range []bool{true, false} {
		r := startBridge(t, New(Options{Agent: "full", Endpoint: sock}))
		caps := `{}`
		if asks {
			caps = `{"_meta":{"zeroclaw.dev/thoughts":true}}`
		}
		r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":%s}}`, caps)
		if m := r.answer(1); m["result"] == nil {
			t.Fatalf("initialize: %v", m)
		}
		r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, t.TempDir())
		sid, _ := r.answer(2)["result"].(map[string]any)["sessionId"].(string)
		r.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"which host is staging?"}]}}`, sid)
		thought := false
		for _, f := range r.framesUntil(3) {
			if strings.Contains(f, `"sessionUpdate":"agent_thought_chunk"`) && strings.Contains(f, `recalled: staging (1.00)`) {
				thought = true
			}
		}
		if thought != asks {
			t.Errorf("asked for thoughts %v: the recalled thought came %v", asks, thought)
		}
	}
}
