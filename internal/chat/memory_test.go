package chat

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

func TestARecallIsOneDimLine(t *testing.T) {
	var out bytes.Buffer
	ch := &chat{out: &out}
	ch.render(client.Update{Type: client.AgentMessageChunk, Text: "half a line"})
	raw := jsontext.Value(`{"sessionId":"s","turnId":"t","seq":3,"type":"memory_recalled","entries":[{"id":"mem_a","key":"staging","score":0.9123},{"id":"mem_b","score":0.4}]}`)
	var u client.Update // as the client reads it
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatal(err)
	}
	u.Raw = raw
	ch.render(u)
	want := "half a line\n" + faint + "recalled: staging (0.91), mem_b (0.40)" + reset + "\n"
	if got := out.String(); got != want {
		t.Fatalf("rendered %q, want %q", got, want)
	}
}
