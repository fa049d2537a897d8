package wss_test

import (
	"context"
	"encoding/json/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// foreignClient is a WebSocket client that is not ours: Python's websockets library
// (Debian's python3-websockets, installed by .ci/run). It pins the certificate by its
// SHA-256 like our client, then runs the handshake without and with a token, an echo
// turn, and an upload, and prints what it saw as one JSON object.
const foreignClient = `
import asyncio, hashlib, json, ssl, sys
import websockets

url, token, pin = sys.argv[1], sys.argv[2], sys.argv[3]

async def main():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # pinned below instead
    out = {}
    async with websockets.connect(url, ssl=ctx, max_size=None) as ws:
        der = ws.transport.get_extra_info("ssl_object").getpeercert(binary_form=True)
        out["pinned"] = hashlib.sha256(der).hexdigest() == pin
        next_id = 0
        async def call(method, params):
            nonlocal next_id
            next_id += 1
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}))
            updates = []
            while True:
                msg = json.loads(await ws.recv())
                if msg.get("method") == "session/update":
                    updates.append(msg["params"])
                elif msg.get("id") == next_id:
                    return msg, updates
        r, _ = await call("initialize", {"protocolVersion": 1})
        out["without_token"] = r.get("error", {}).get("code")
        r, _ = await call("initialize", {"protocolVersion": 1, "authToken": token, "clientInfo": {"name": "python", "version": "1"}})
        out["principal"] = r["result"]["principal"]["id"]
        r, _ = await call("session/new", {"agentAlias": "default"})
        sid = r["result"]["sessionId"]
        r, updates = await call("session/prompt", {"sessionId": sid, "prompt": "hi from python"})
        out["stop_reason"] = r["result"]["stopReason"]
        out["streamed"] = "".join(u.get("text", "") for u in updates if u.get("type") == "agent_message_chunk")
        r, _ = await call("file/upload/begin", {"session_id": sid, "name": "a.txt", "size_bytes": 1})
        out["upload"] = r.get("error", {}).get("code")
    print(json.dumps(out))

asyncio.run(main())
`

// python finds a Python with the websockets library: Debian's /usr/bin/python3 when
// the python3 on PATH (a pyenv, a venv) lacks it.
func python(t *testing.T) string {
	t.Helper()
	var candidates []string
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/python3")
	for _, p := range candidates {
		if exec.Command(p, "-c", "import websockets").Run() == nil {
			return p
		}
	}
	msg := "no python3 with the websockets library (apt-get install python3-websockets): the foreign-client test cannot run"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func TestForeignClientTalksToTheDaemonOverWSS(t *testing.T) {
	py := python(t)
	d := startDaemon(t, daemonOptions{})
	script := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(script, []byte(foreignClient), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, script, d.url, d.token(t, "alice"), d.fingerprint).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("python client: %v\n%s%s", err, out, stderr)
	}
	var got struct {
		Pinned       bool    `json:"pinned"`
		WithoutToken float64 `json:"without_token"`
		Principal    string  `json:"principal"`
		StopReason   string  `json:"stop_reason"`
		Streamed     string  `json:"streamed"`
		Upload       float64 `json:"upload"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	if !got.Pinned || got.WithoutToken != -32010 || got.Principal != "user:alice" || got.StopReason != "end_turn" ||
		!strings.Contains(got.Streamed, "echo: hi from python") || got.Upload != -32012 {
		t.Fatalf("python client saw %+v", got)
	}
}
