//go:build unix

package main

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// freePort returns a TCP port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pairToken runs zeroclaw pair and returns the token and the fingerprint it printed.
func pairToken(t *testing.T, h string) (token, fingerprint string) {
	t.Helper()
	out, errOut, code := zeroclaw(t, h, "pair")
	if code != 0 {
		t.Fatalf("pair: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if fp, ok := strings.CutPrefix(l, "Server certificate fingerprint: "); ok {
			fingerprint = fp
		}
	}
	token = lines[len(lines)-1]
	if len(fingerprint) != 64 || !strings.HasPrefix(token, "zc_") {
		t.Fatalf("pair printed no fingerprint or token:\n%s", out)
	}
	return token, fingerprint
}

func TestRemoteClientsOverWSSOfTheBuiltDaemon(t *testing.T) {
	h := home(t)
	port := freePort(t)
	writeConfig(t, h, "[wss]\nenabled = true\nport = "+strconv.Itoa(port)+"\n")
	d := startDaemon(t, h, nil)
	token, fp := pairToken(t, h)
	url := "wss://127.0.0.1:" + strconv.Itoa(port)

	out, errOut, code := zeroclaw(t, h, "status", "--url", url, "--token", token, "--fingerprint", fp)
	if code != 0 || !strings.Contains(out, "version:") {
		t.Fatalf("status --url: exit %d\n%s%s", code, out, errOut)
	}

	// The token from the environment; a wrong pin; no token.
	cmd := command(h, "rpc", "status", "--url", url, "--fingerprint", fp)
	cmd.Env = append(cmd.Env, "ZEROCLAW_AUTH_TOKEN="+token, "GORACE=atexit_sleep_ms=0")
	out, errOut, err := run(t, cmd)
	if exitCode(err) != 0 || !strings.Contains(out, `"serverVersion"`) {
		t.Fatalf("rpc status with ZEROCLAW_AUTH_TOKEN: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, code := zeroclaw(t, h, "rpc", "status", "--url", url, "--token", token, "--fingerprint", strings.Repeat("0", 64)); code == 0 || !strings.Contains(errOut, "fingerprint") {
		t.Fatalf("a wrong pin: exit %d, %s", code, errOut)
	}
	if _, errOut, code := zeroclaw(t, h, "rpc", "status", "--url", url, "--fingerprint", fp); code == 0 || !strings.Contains(errOut, "-32010") {
		t.Fatalf("no token: exit %d, %s", code, errOut)
	}

	// A piped chat turn over WSS.
	chat := command(h, "chat", "--url", url, "--token", token, "--fingerprint", fp)
	chat.Stdin = strings.NewReader("hello")
	chat.Env = append(chat.Env, "GORACE=atexit_sleep_ms=0")
	out, errOut, err = run(t, chat)
	if exitCode(err) != 0 || strings.TrimSpace(out) != "echo: hello" {
		t.Fatalf("chat --url: %v\n%q\n%s", err, out, errOut)
	}
	if !strings.Contains(d.stderr.String(), "wss:127.0.0.1:") {
		t.Errorf("no connection logged with a wss: peer label:\n%s", d.stderr.String())
	}

	// Restarted, the daemon serves the same certificate.
	d.cmd.Process.Signal(os.Interrupt)
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	startDaemon(t, h, nil)
	if _, again := pairToken(t, h); again != fp {
		t.Fatalf("fingerprint after restart %s, before %s", again, fp)
	}
}

// TestEphemeralDaemonCountsWSSClients: a WSS client keeps an ephemeral daemon alive
// like a local one, and its leaving starts the grace like a local one's.
func TestEphemeralDaemonCountsWSSClients(t *testing.T) {
	h := home(t)
	port := freePort(t)
	writeConfig(t, h, "[wss]\nenabled = true\nport = "+strconv.Itoa(port)+"\n")
	d := launchEphemeral(t, h)
	local := dial(t, d.socket) // held, so the daemon stays while the test sets up
	local.initialize()
	token, fp := pairToken(t, h)
	d.waitLog(`msg="ephemeral: a client left" clients=1`, 1) // pair's connection, gone before the WSS one comes

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	remote, err := client.Dial(ctx, "wss://127.0.0.1:"+strconv.Itoa(port), client.WithToken(token), client.WithFingerprint(fp))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	local.conn.Close()
	// The local client is the second to leave, and the WSS client remains: no grace.
	d.waitLog(`msg="ephemeral: a client left" clients=1`, 2)
	if strings.Contains(d.stderr.String(), `clients=0`) {
		t.Fatalf("the count reached zero with a WSS client connected:\n%s", d.stderr.String())
	}
	remote.Close()
	d.waitLog(`msg="ephemeral: a client left" clients=0 exitAfter=1s`, 1)
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit status %v, want 0", err)
	}
}
