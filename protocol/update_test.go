package protocol

import (
	"encoding/json/v2"
	"testing"
)

// Each type carries its members even when zero, and nothing else that is zero.
func TestAnUpdateCarriesTheMembersOfItsType(t *testing.T) {
	total := 4.0
	for _, c := range []struct {
		u    Update
		want string
	}{
		{Update{SessionID: "s", TurnID: "t", Seq: 1, Type: AgentMessageChunk},
			`{"sessionId":"s","turnId":"t","seq":1,"type":"agent_message_chunk","text":""}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 2, Type: ToolResult, ToolCallID: "c", Name: "shell"},
			`{"sessionId":"s","turnId":"t","seq":2,"type":"tool_result","toolCallId":"c","name":"shell","rawOutput":"","isError":false}`},
		{Update{SessionID: "s", Seq: 3, Type: SessionInfo, Mode: "plan"},
			`{"sessionId":"s","seq":3,"type":"session_info","mode":"plan","model":"","title":""}`},
		{Update{SessionID: "s", Seq: 4, Type: HistoryCompacted},
			`{"sessionId":"s","seq":4,"type":"history_compacted","before":0,"after":0}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 5, Type: Usage, InputTokens: 7, ContextWindow: 100},
			`{"sessionId":"s","turnId":"t","seq":5,"type":"usage","inputTokens":7,"outputTokens":0,"contextTokens":0,"contextWindow":100}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 6, Type: ToolProgress, ToolCallID: "c", Total: &total},
			`{"sessionId":"s","turnId":"t","seq":6,"type":"tool_progress","toolCallId":"c","progress":0,"total":4}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 7, Type: Plan, Entries: []PlanEntry{}},
			`{"sessionId":"s","turnId":"t","seq":7,"type":"plan","entries":[]}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 8, Type: HistoryTrimmed, Kept: 3},
			`{"sessionId":"s","turnId":"t","seq":8,"type":"history_trimmed","droppedMessages":0,"keptMessages":3}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 7, Type: Plan, Entries: []PlanEntry{{Content: "a", Status: "pending"}}},
			`{"sessionId":"s","turnId":"t","seq":7,"type":"plan","entries":[{"content":"a","status":"pending"}]}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 8, Type: MemoryRecalled, Recalled: []RecalledMemory{{ID: "m1", Score: 0.5}, {ID: "m2", Key: "k", Score: 1}}},
			`{"sessionId":"s","turnId":"t","seq":8,"type":"memory_recalled","entries":[{"id":"m1","score":0.5},{"id":"m2","key":"k","score":1}]}`},
		{Update{SessionID: "s", TurnID: "t", Seq: 9, Type: "some_later_type", Text: "x", IsError: true},
			`{"sessionId":"s","turnId":"t","seq":9,"type":"some_later_type","text":"x","isError":true}`},
	} {
		got, err := json.Marshal(&c.u)
		if err != nil || string(got) != c.want {
			t.Errorf("%s:\n got %s %v\nwant %s", c.u.Type, got, err, c.want)
		}
		var back Update
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if (back.Type == MemoryRecalled) != (back.Recalled != nil) || back.Type == MemoryRecalled && back.Entries != nil {
			t.Errorf("%s decodes its entries as plan %v, recalled %v", back.Type, back.Entries, back.Recalled)
		}
		again, _ := json.Marshal(&back)
		if string(again) != c.want {
			t.Errorf("%s does not survive a round trip: %s", c.u.Type, again)
		}
	}
}
