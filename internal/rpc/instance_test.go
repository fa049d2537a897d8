package rpc

import (
	"strings"
	"testing"
)

func instanceOf(t *testing.T, h *harness) string {
	t.Helper()
	c := h.client(t)
	c.send(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}`)
	res, _ := c.recv()["result"].(map[string]any)
	id, _ := res["instanceId"].(string)
	if !strings.HasPrefix(id, "inst_") || len(id) < 20 {
		t.Fatalf("instanceId %q", id)
	}
	return id
}

func TestInstanceIDIsTheSameForEveryConnectionOfOneStartAndNewAtTheNext(t *testing.T) {
	a := startServer(t, Config{})
	first := instanceOf(t, a)
	if again := instanceOf(t, a); again != first {
		t.Fatalf("a second connection to the same server got %q, the first %q", again, first)
	}
	a.stop(t)
	if next := instanceOf(t, startServer(t, Config{})); next == first {
		t.Fatalf("a new start reused instanceId %q", first)
	}
}
