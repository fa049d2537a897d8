package provider

import (
	"encoding/json/jsontext"
	"slices"
	"testing"
)

func TestAlternatingMendsEveryMalformedContext(t *testing.T) {
	call := func(id string) ToolCall { return ToolCall{ID: id, Name: "look", Arguments: jsontext.Value(`{}`)} }
	u := func(s string) Message { return Message{Role: RoleUser, Text: s} }
	a := func(s string, calls ...ToolCall) Message {
		return Message{Role: RoleAssistant, Text: s, ToolCalls: calls}
	}
	r := func(id, s string) Message { return Message{Role: RoleTool, ToolCallID: id, Name: "look", Text: s} }
	missing := func(id string) Message {
		return Message{Role: RoleTool, ToolCallID: id, Name: "look", Text: Unanswered, IsError: true}
	}
	for _, tt := range []struct {
		name     string
		in, want []Message
	}{
		{"well formed stays as it is",
			[]Message{u("a"), a("", call("1")), r("1", "x"), a("done"), u("b")},
			[]Message{u("a"), a("", call("1")), r("1", "x"), a("done"), u("b")}},
		{"prompts in a row merge with a blank line",
			[]Message{u("a"), u("b"), u("c")},
			[]Message{u("a\n\nb\n\nc")}},
		{"an empty prompt merges into nothing",
			[]Message{u("a"), u(""), a("ok"), u(""), u("b")},
			[]Message{u("a"), a("ok"), u("b")}},
		{"an assistant message that says nothing is left out",
			[]Message{u("a"), a(""), u("b")},
			[]Message{u("a\n\nb")}},
		{"answers before the first prompt are left out",
			[]Message{a("hello"), r("9", "x"), u("a")},
			[]Message{u("a")}},
		{"assistant messages in a row merge",
			[]Message{u("a"), a("one"), a("two", call("1")), r("1", "x")},
			[]Message{u("a"), a("one\n\ntwo", call("1")), r("1", "x")}},
		{"a call without its result gets one",
			[]Message{u("a"), a("", call("1"), call("2")), r("2", "y"), u("b")},
			[]Message{u("a"), a("", call("1"), call("2")), r("2", "y"), missing("1"), u("b")}},
		{"a call at the end without its result gets one",
			[]Message{u("a"), a("", call("1"))},
			[]Message{u("a"), a("", call("1")), missing("1")}},
		{"a result nobody asked for is left out",
			[]Message{u("a"), r("1", "x"), a("ok"), r("ok", "y"), u("b")},
			[]Message{u("a"), a("ok"), u("b")}},
		{"a result given twice is kept once",
			[]Message{u("a"), a("", call("1")), r("1", "x"), r("1", "again"), u("b")},
			[]Message{u("a"), a("", call("1")), r("1", "x"), u("b")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := alternating(in)
			if d := diff(tt.want, got); d != "" {
				t.Error(d)
			}
			if d := diff(tt.in, in); d != "" {
				t.Errorf("the input changed: %s", d)
			}
		})
	}
}
