package tool

import (
	"context"
	"encoding/json/jsontext"
	"fmt"
	"slices"
	"strings"
	"testing"
)

type planRecorder struct{ plans [][]PlanEntry }

func (p *planRecorder) Plan(entries []PlanEntry) { p.plans = append(p.plans, entries) }

func TestUpdatePlan(t *testing.T) {
	long := strings.Repeat("x", MaxPlanEntryContent+1)
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"content":"s","status":"pending"},`, MaxPlanEntries+1), ",") + "]"
	tests := []struct {
		name    string
		args    string
		want    []PlanEntry
		wantOut string
		wantErr string
	}{
		{name: "a plan", args: `{"entries":[{"content":"read","status":"completed","priority":"high"},{"content":"edit","status":"in_progress"},{"content":"test","status":"pending","priority":"low"}]}`,
			want:    []PlanEntry{{Content: "read", Status: "completed", Priority: "high"}, {Content: "edit", Status: "in_progress", Priority: ""}, {Content: "test", Status: "pending", Priority: "low"}},
			wantOut: "plan updated: 3 steps (1 completed, 1 in progress, 1 pending)"},
		{name: "an empty plan clears it", args: `{"entries":[]}`, want: []PlanEntry{}, wantOut: "plan updated: 0 steps (0 completed, 0 in progress, 0 pending)"},
		{name: "unknown members ignored", args: `{"entries":[{"content":"a","status":"pending","id":7}]}`, want: []PlanEntry{{Content: "a", Status: "pending", Priority: ""}}},
		{name: "no entries", args: `{}`, wantErr: "entries is required"},
		{name: "entries not a list", args: `{"entries":"do it"}`, wantErr: "invalid arguments: "},
		{name: "bad status", args: `{"entries":[{"content":"a","status":"done"}]}`, wantErr: `entries[0].status is "done"`},
		{name: "no status", args: `{"entries":[{"content":"a"}]}`, wantErr: `entries[0].status is ""`},
		{name: "bad priority", args: `{"entries":[{"content":"a","status":"pending"},{"content":"b","status":"pending","priority":"urgent"}]}`, wantErr: `entries[1].priority is "urgent"`},
		{name: "empty content", args: `{"entries":[{"content":"  ","status":"pending"}]}`, wantErr: "entries[0].content is empty"},
		{name: "content too long", args: `{"entries":[{"content":"` + long + `","status":"pending"}]}`, wantErr: fmt.Sprintf("at most %d", MaxPlanEntryContent)},
		{name: "too many entries", args: `{"entries":` + many + `}`, wantErr: fmt.Sprintf("at most %d are allowed", MaxPlanEntries)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &planRecorder{}
			r := UpdatePlan{}.Run(context.Background(), Env{Workspace: t.TempDir(), Planner: rec}, jsontext.Value(tt.args))
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				if len(rec.plans) != 0 {
					t.Errorf("a refused plan was published: %v", rec.plans)
				}
				return
			}
			mustOK(t, r)
			if tt.wantOut != "" && r.Output != tt.wantOut {
				t.Errorf("output %q, want %q", r.Output, tt.wantOut)
			}
			if len(rec.plans) != 1 || !slices.Equal(rec.plans[0], tt.want) || rec.plans[0] == nil {
				t.Fatalf("published %#v, want one plan %#v", rec.plans, tt.want)
			}
		})
	}
	// Without a planner (no session) the call still answers.
	mustOK(t, run(t, UpdatePlan{}, t.TempDir(), `{"entries":[{"content":"a","status":"pending"}]}`))
}
