package jsonrpc

import (
	"encoding/json/jsontext"
	"errors"
	"testing"
)

type sampleParams struct {
	AgentAlias   string `json:"agentAlias"`
	SessionID    string `json:"session_id"`
	KeepSiblings bool   `json:"keep_siblings"`
	Cwd          string `json:"cwd"`
	Limit        *int   `json:"limit"`
}

func TestDecodeParams(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		want    sampleParams
		errCode int64
	}{
		{"exact names", `{"agentAlias":"a","session_id":"s","keep_siblings":true,"cwd":"/w"}`,
			sampleParams{AgentAlias: "a", SessionID: "s", KeepSiblings: true, Cwd: "/w"}, 0},
		{"alternative spellings", `{"agent_alias":"a","sessionId":"s","keepSiblings":true}`,
			sampleParams{AgentAlias: "a", SessionID: "s", KeepSiblings: true}, 0},
		{"both spellings agreeing", `{"agentAlias":"a","agent_alias":"a"}`, sampleParams{AgentAlias: "a"}, 0},
		{"both spellings disagreeing", `{"agentAlias":"a","agent_alias":"b"}`, sampleParams{}, CodeInvalidParams},
		{"unknown members ignored", `{"agentAlias":"a","whatever":[1,2]}`, sampleParams{AgentAlias: "a"}, 0},
		{"case variants are unknown", `{"AgentAlias":"a","CWD":"/x"}`, sampleParams{}, 0},
		{"absent params", ``, sampleParams{}, 0},
		{"array params", `["a"]`, sampleParams{}, CodeInvalidParams},
		{"wrong type", `{"keep_siblings":"yes"}`, sampleParams{}, CodeInvalidParams},
		{"wrong type under the alternative name", `{"keepSiblings":1}`, sampleParams{}, CodeInvalidParams},
		// The skim that looks for alternative spellings must not be fooled by values.
		{"alternative spelling after nested values", `{"x":{"agentAlias":"n","y":["}",{"z":"\"]"}]},"s":"a\\","sessionId":"s"}`,
			sampleParams{SessionID: "s"}, 0},
		{"alternative spelling after numbers and literals", `{"a":-1.5e3, "b":true ,"c":null,"agent_alias":"a"}`,
			sampleParams{AgentAlias: "a"}, 0},
		{"escaped alternative name", `{"agent\u005falias":"a"}`, sampleParams{AgentAlias: "a"}, 0},
		{"nested alternative names are left alone", `{"x":{"agent_alias":"n"},"agentAlias":"a"}`, sampleParams{AgentAlias: "a"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got sampleParams
			err := DecodeParams(jsontext.Value(tt.params), &got)
			if tt.errCode != 0 {
				var e *Error
				if !errors.As(err, &e) || e.Code != tt.errCode {
					t.Fatalf("err = %v, want code %d", err, tt.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeParamsErrorNamesTheParam(t *testing.T) {
	var p sampleParams
	err := DecodeParams(jsontext.Value(`{"cwd":5}`), &p)
	var e *Error
	if !errors.As(err, &e) || string(e.Data) != `{"param":"cwd"}` {
		t.Fatalf("err = %v, want data naming cwd", err)
	}
}

func TestAlternative(t *testing.T) {
	for in, want := range map[string]string{
		"agentAlias": "agent_alias", "agent_alias": "agentAlias", "data_b64": "dataB64",
		"dataB64": "data_b64", "cwd": "cwd", "protocolVersion": "protocol_version",
	} {
		if got := alternative(in); got != want {
			t.Errorf("alternative(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStringMemberIsTheTopLevelStringAsSpelled(t *testing.T) {
	for _, tc := range []struct {
		params, want string
		ok           bool
	}{
		{`{"prompt":"hi"}`, `"hi"`, true},
		{` { "sessionId" : "s1" , "prompt" : "a\nb\u00e9\/\"c\\" } `, `"a\nb\u00e9\/\"c\\"`, true},
		{`{"x":{"prompt":"inner"},"y":["prompt","z"],"prompt":"outer"}`, `"outer"`, true},
		{`{"note":"\"prompt\":\"no\"","prompt":"yes","after":1}`, `"yes"`, true},
		{`{"n":-1.5e3,"t":true,"z":null,"prompt":""}`, `""`, true},
		{`{"sessionId":"s1"}`, "", false},
		{`{"prompt":12}`, "", false},
		{`{"prompt":null}`, "", false},
		{`{"prompt":{"text":"hi"}}`, "", false},
		{`{"pr\u006fmpt":"escaped name"}`, "", false},
		{`["prompt","hi"]`, "", false},
		{`{}`, "", false},
		{``, "", false},
	} {
		got, ok := StringMember(jsontext.Value(tc.params), "prompt")
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("StringMember(%s) = %s, %v; want %s, %v", tc.params, got, ok, tc.want, tc.ok)
		}
	}
}
