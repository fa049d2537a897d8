package rpc

import (
	"encoding/json/v2"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

func TestStatusEncodingMatchesEncodingJSON(t *testing.T) {
	for _, r := range []statusResult{
		{},
		{ServerVersion: ServerVersion, ProtocolVersion: 1, PID: 4242, UptimeMs: 1 << 40, DataDir: `/tmp/"quoted"\dir`,
			Endpoint: "/tmp/é/<sock>&\u2028", Connections: 3, ActiveSessions: 2, Sessions: []session.Info{
				{SessionID: "s1", AgentAlias: "default", State: "idle"}, {SessionID: "s\n2", AgentAlias: "a\tb", State: "running"}}},
		{PID: -1, UptimeMs: -5, Sessions: []session.Info{}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.AppendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Errorf("AppendJSON = %s, %v\nwant %s", got, err, want)
		}
	}
	for _, bad := range []statusResult{{DataDir: "\xff"}, {Sessions: []session.Info{{State: "\xfe"}}}} {
		if _, err := json.Marshal(bad); err == nil {
			t.Fatal("encoding/json took invalid UTF-8: the test's premise is wrong")
		}
		if _, err := bad.AppendJSON(nil); err == nil {
			t.Errorf("AppendJSON(%+v) took invalid UTF-8", bad)
		}
	}
}
