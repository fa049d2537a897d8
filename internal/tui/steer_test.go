package tui

import (
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

func TestEnterSteersTheStreamingTurnAndTabQueuesTheNextPrompt(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.answers["session/steer"] = map[string]any{"outcome": "injected", "turnId": "t1"}
	// With no turn streaming, Enter prompts.
	u.typeText("first")
	u.press("enter")
	u.wantCall(`session/prompt {"prompt":"first","sessionId":"s1"}`)
	if u.b.called("session/steer") {
		t.Fatal("Enter with no turn streaming steered")
	}
	// Another client's turn (seen begin, its end unknown to this UI): Enter prompts.
	u.push(client.Update{TurnID: "t0", Type: client.UserMessage, Text: "theirs"})
	u.typeText("mine")
	u.press("enter")
	u.wantCall(`session/prompt {"prompt":"mine","sessionId":"s1"}`)
	if u.b.called("session/steer") {
		t.Fatal("Enter during another client's turn steered")
	}
	// A turn of this UI streams (its prompt in flight): Enter steers it.
	u.m.running = 1
	u.push(client.Update{TurnID: "t1", Type: client.UserMessage, Text: "long job"}, chunk("t1", "working"))
	u.typeText("use the other file")
	u.press("enter")
	u.wantCall(`session/steer {"sessionId":"s1","text":"use the other file"}`)
	if u.m.input.Value() != "" {
		t.Errorf("the input kept %q after the steer", u.m.input.Value())
	}
	// Tab sends the line as the next prompt instead.
	u.typeText("then run the tests")
	u.press("tab")
	u.wantCall(`session/prompt {"prompt":"then run the tests","sessionId":"s1"}`)
	// A command is still completed by Tab, not sent.
	u.typeText("/comp")
	u.press("tab")
	if v := u.m.input.Value(); v != "/compact " {
		t.Errorf("Tab on a command while a turn streams: input %q", v)
	}
	// The steered message shows in the turn.
	u.push(client.Update{TurnID: "t1", Type: client.UserMessage, Text: "use the other file", Steered: true})
	u.wantScreen("use the other file")
	u.m.input.Reset() // the completed command
	// Once the turn's answer came, Enter prompts again.
	u.send(promptDoneMsg{r: &client.PromptResult{SessionID: "s1", TurnID: "t1", StopReason: client.StopEndTurn}})
	u.typeText("next one")
	u.press("enter")
	u.wantCall(`session/prompt {"prompt":"next one","sessionId":"s1"}`)
}

func TestASteerThatStartedATurnSaysSo(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.answers["session/steer"] = map[string]any{"outcome": "startedTurn", "turnId": "t2"}
	u.m.running = 1
	u.push(client.Update{TurnID: "t1", Type: client.UserMessage, Text: "long job"})
	u.typeText("late line")
	u.press("enter")
	u.wantScreen("the turn had ended: the line started a new one")
}
