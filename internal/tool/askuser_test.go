package tool

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"slices"
	"testing"
)

// fakeAsker answers every question with answer (ok false: nobody answered) and
// records what it was asked.
type fakeAsker struct {
	answer   string
	ok       bool
	err      error // the answering client reported a failure
	question string
	choices  []string
	calls    int
}

func (f *fakeAsker) Ask(ctx context.Context, question string, choices []string) (string, bool, error) {
	f.calls++
	f.question, f.choices = question, choices
	return f.answer, f.ok, f.err
}

func TestAskUser(t *testing.T) {
	tests := []struct {
		name        string
		asker       *fakeAsker // nil: no Asker at all
		args        string
		want        string
		wantErr     bool
		wantChoices []string
	}{
		{name: "answered", asker: &fakeAsker{answer: "blue", ok: true},
			args: `{"question":"Which colour?","choices":["red","blue"]}`, want: "blue", wantChoices: []string{"red", "blue"}},
		{name: "answered without choices", asker: &fakeAsker{answer: "42", ok: true},
			args: `{"question":"How many?"}`, want: "42"},
		{name: "empty answer is an answer", asker: &fakeAsker{answer: "", ok: true},
			args: `{"question":"Anything to add?"}`, want: ""},
		{name: "nobody answered", asker: &fakeAsker{ok: false},
			args: `{"question":"Which colour?"}`, want: NoAnswer},
		{name: "no asker", args: `{"question":"Which colour?"}`, want: NoAnswer},
		{name: "no question", asker: &fakeAsker{ok: true}, args: `{"choices":["a"]}`,
			want: "invalid arguments: question is required", wantErr: true},
		{name: "blank question", asker: &fakeAsker{ok: true}, args: `{"question":" "}`,
			want: "invalid arguments: question is required", wantErr: true},
		{name: "choices not an array", asker: &fakeAsker{ok: true}, args: `{"question":"q","choices":"a,b"}`,
			want: "invalid arguments: ", wantErr: true},
		{name: "choices not strings", asker: &fakeAsker{ok: true}, args: `{"question":"q","choices":[1,2]}`,
			want: "invalid arguments: ", wantErr: true},
		{name: "the client answered with an error", asker: &fakeAsker{err: errors.New("form rejected")},
			args: `{"question":"q"}`, want: "ask_user failed: form rejected", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env{Workspace: t.TempDir()}
			if tt.asker != nil {
				env.Asker = tt.asker
			}
			r := AskUser{}.Run(context.Background(), env, jsontext.Value(tt.args))
			if tt.wantErr {
				mustFail(t, r, tt.want)
				if tt.asker.err == nil && tt.asker.calls != 0 {
					t.Fatal("the user was asked despite invalid arguments")
				}
				return
			}
			if r.IsError || r.Output != tt.want {
				t.Fatalf("got %q (error %v), want %q", r.Output, r.IsError, tt.want)
			}
			if tt.asker != nil && !slices.Equal(tt.asker.choices, tt.wantChoices) {
				t.Fatalf("asked with choices %q, want %q", tt.asker.choices, tt.wantChoices)
			}
		})
	}
}
