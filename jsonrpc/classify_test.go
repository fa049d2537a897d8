package jsonrpc

import (
	"testing"
)

func TestClassify(t *testing.T) {
	type want struct {
		kind   string // request, notification, response, reject, drop
		code   int64  // for reject
		id     string // reply id for reject, id for request/response
		method string
	}
	tests := []struct {
		name  string
		frame string
		want  want
	}{
		{"request", `{"jsonrpc":"2.0","method":"status","params":{},"id":2}`, want{kind: "request", id: "2", method: "status"}},
		{"request with string id", `{"jsonrpc":"2.0","method":"status","id":"a"}`, want{kind: "request", id: `"a"`, method: "status"}},
		{"null id is a request", `{"jsonrpc":"2.0","method":"status","id":null}`, want{kind: "request", id: "null", method: "status"}},
		{"fractional id echoed as sent", `{"jsonrpc":"2.0","method":"m","id":1.50}`, want{kind: "request", id: "1.50", method: "m"}},
		{"notification", `{"jsonrpc":"2.0","method":"session/cancel","params":[1]}`, want{kind: "notification", method: "session/cancel"}},
		{"escaped method name", `{"jsonrpc":"2.0","method":"st\u0061tus","id":1}`, want{kind: "request", id: "1", method: "status"}},
		{"escaped member name", `{"jsonrpc":"2.0","meth\u006fd":"status","id":1}`, want{kind: "request", id: "1", method: "status"}},
		{"unknown members ignored", `{"jsonrpc":"2.0","method":"x","id":1,"extra":{"a":[1]}}`, want{kind: "request", id: "1", method: "x"}},

		{"invalid json", `{"jsonrpc":"2.0",`, want{kind: "reject", code: -32700, id: "null"}},
		{"garbage", `hello`, want{kind: "reject", code: -32700, id: "null"}},
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\",\"id\":1}", want{kind: "reject", code: -32700, id: "null"}},
		{"duplicate names", `{"jsonrpc":"2.0","method":"a","method":"b","id":1}`, want{kind: "reject", code: -32700, id: "null"}},
		{"two values", `{"jsonrpc":"2.0","method":"a","id":1} {}`, want{kind: "reject", code: -32700, id: "null"}},

		{"batch array", `[{"jsonrpc":"2.0","method":"status","id":1}]`, want{kind: "reject", code: -32600, id: "null"}},
		{"scalar", `42`, want{kind: "reject", code: -32600, id: "null"}},
		{"empty object", `{}`, want{kind: "reject", code: -32600, id: "null"}},
		{"id only", `{"jsonrpc":"2.0","id":7}`, want{kind: "reject", code: -32600, id: "null"}},
		{"non-string method", `{"jsonrpc":"2.0","method":5,"id":7}`, want{kind: "reject", code: -32600, id: "null"}},
		{"method with result", `{"jsonrpc":"2.0","method":"m","result":1,"id":7}`, want{kind: "reject", code: -32600, id: "null"}},
		{"method with error", `{"jsonrpc":"2.0","method":"m","error":{"code":1,"message":"x"},"id":7}`, want{kind: "reject", code: -32600, id: "null"}},
		{"case variant is not method", `{"jsonrpc":"2.0","Method":"status","id":7}`, want{kind: "reject", code: -32600, id: "null"}},

		{"request missing jsonrpc keeps id", `{"method":"status","id":3}`, want{kind: "reject", code: -32600, id: "3"}},
		{"request wrong version keeps id", `{"jsonrpc":"1.0","method":"status","id":"x"}`, want{kind: "reject", code: -32600, id: `"x"`}},
		{"null params", `{"jsonrpc":"2.0","method":"status","params":null,"id":4}`, want{kind: "reject", code: -32600, id: "4"}},
		{"string params", `{"jsonrpc":"2.0","method":"status","params":"a","id":4}`, want{kind: "reject", code: -32600, id: "4"}},
		{"object id unrecoverable", `{"jsonrpc":"2.0","method":"status","id":{"a":1}}`, want{kind: "reject", code: -32600, id: "null"}},
		{"bool id unrecoverable", `{"jsonrpc":"2.0","method":"status","id":true}`, want{kind: "reject", code: -32600, id: "null"}},
		{"malformed notification answered with null", `{"jsonrpc":"2.0","method":"status","params":1}`, want{kind: "reject", code: -32600, id: "null"}},

		{"response", `{"jsonrpc":"2.0","result":{"a":1},"id":"zc-out-0"}`, want{kind: "response", id: `"zc-out-0"`}},
		{"null result is a response", `{"jsonrpc":"2.0","result":null,"id":"zc-out-0"}`, want{kind: "response", id: `"zc-out-0"`}},
		{"error response", `{"jsonrpc":"2.0","error":{"code":-1,"message":"no"},"id":1}`, want{kind: "response", id: "1"}},
		{"response with null id", `{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"},"id":null}`, want{kind: "response", id: "null"}},

		{"response without jsonrpc", `{"result":1,"id":1}`, want{kind: "drop"}},
		{"response without id", `{"jsonrpc":"2.0","result":1}`, want{kind: "drop"}},
		{"response with object id", `{"jsonrpc":"2.0","result":1,"id":{}}`, want{kind: "drop"}},
		{"response with both members", `{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"x"},"id":1}`, want{kind: "drop"}},
		{"response with string error", `{"jsonrpc":"2.0","error":"bad","id":1}`, want{kind: "drop"}},
		{"response with fractional code", `{"jsonrpc":"2.0","error":{"code":1.5,"message":"x"},"id":1}`, want{kind: "drop"}},
		{"response without message", `{"jsonrpc":"2.0","error":{"code":1},"id":1}`, want{kind: "drop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Classify([]byte(tt.frame))
			checkOneSet(t, env)
			var got want
			switch {
			case env.Request != nil && env.Request.IsNotification():
				got = want{kind: "notification", method: env.Request.Method}
			case env.Request != nil:
				got = want{kind: "request", id: string(env.Request.ID), method: env.Request.Method}
			case env.Response != nil:
				got = want{kind: "response", id: string(env.Response.ID)}
			case env.Reject != nil:
				got = want{kind: "reject", code: env.Reject.Error.Code, id: string(env.Reject.ID)}
			default:
				got = want{kind: "drop"}
			}
			if got != tt.want {
				t.Errorf("Classify(%s)\n got %+v\nwant %+v", tt.frame, got, tt.want)
			}
		})
	}
}

func TestClassifyKeepsParamsAndResultRaw(t *testing.T) {
	env := Classify([]byte(`{"jsonrpc":"2.0","method":"m","params": {"a" : 1},"id":1}`))
	if got := string(env.Request.Params); got != `{"a" : 1}` {
		t.Errorf("params = %s", got)
	}
	env = Classify([]byte(`{"jsonrpc":"2.0","result":null,"id":"zc-out-3"}`))
	if got := string(env.Response.Result); got != "null" {
		t.Errorf("result = %q, want null (an explicit null result is a success)", got)
	}
}

func checkOneSet(t *testing.T, env Envelope) {
	t.Helper()
	n := 0
	for _, set := range []bool{env.Request != nil, env.Response != nil, env.Reject != nil, env.Dropped != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("envelope has %d outcomes set, want exactly 1: %+v", n, env)
	}
}
