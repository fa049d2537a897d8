package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The session controls and the toolbox in the terminal UI, against the real daemon
// with the echo provider (two models from config): /mode and /model pickers,
// /title, the context in the status line, /compact, an approved edit_file with its
// coloured diff, update_plan's plan, and the session picker's fork and rename.
func TestTUIUnderTmuxSessionControlsToolboxAndFork(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[providers.echo]\nkind = \"echo\"\nmodels = [\"echo\", \"echo-large\"]\n\n[agents.default]\nprovider = \"echo\"\n")
	startDaemon(t, h, nil)
	p := startTmux(t, h, 100, 30, "tui")
	p.waitStatus("● connected")
	p.waitStatus("default · echo · supervised")

	// A prompt: the status line shows the model context used and the window (the
	// echo provider counts words: 2 of the prompt, 3 of the reply; window 32,768).
	p.typeText("hello controls")
	p.keys("Enter")
	p.waitFor("echo: hello controls")
	p.waitStatus("ctx 5/32k (0%)")

	// write_file, then edit_file on that file: the approval overlay, then the diff,
	// the removed line red and the added one green.
	p.typeText(`/tool write_file {"path":"notes.md","content":"alpha\nbeta\ngamma\n"}`)
	p.keys("Enter")
	p.waitFor("Allow write_file?")
	p.keys("y")
	p.waitFor("write_file -> wrote 17 bytes to notes.md")
	p.typeText(`/tool edit_file {"path":"notes.md","old_text":"beta","new_text":"BETA"}`)
	p.keys("Enter")
	screen := p.waitFor("Allow edit_file?")
	if !strings.Contains(screen, `"old_text":"beta"`) {
		t.Fatalf("the approval overlay lacks the call's arguments:\n%s", screen)
	}
	p.keys("y")
	screen = p.waitFor("edit_file -> edited notes.md")
	for _, want := range []string{"✓ edit_file path=notes.md", "│ edited /", "notes.md", "│   alpha", "│ - beta", "│ + BETA", "│   gamma"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the edit_file card lacks %q:\n%s", want, screen)
		}
	}
	if strings.Index(screen, "- beta") > strings.Index(screen, "+ BETA") {
		t.Fatalf("the diff lists the addition before the removal:\n%s", screen)
	}
	coloured := p.captureEscapes()
	added, removed, same := fgBefore(coloured, "+ BETA"), fgBefore(coloured, "- beta"), fgBefore(coloured, "  gamma")
	if added == "" || removed == "" || added == removed || added == same || removed == same {
		t.Fatalf("the diff's colours: added %q, removed %q, context %q:\n%q", added, removed, same, coloured)
	}

	// update_plan (no approval): the plan is shown above the input.
	p.typeText(`/tool update_plan {"entries":[{"content":"write the notes","status":"completed"},` +
		`{"content":"edit the notes","status":"in_progress","priority":"high"},{"content":"ship it","status":"pending"}]}`)
	p.keys("Enter")
	// The plan update comes during the call, before its result: wait for both.
	screen = p.waitScreen("the plan and the finished card", func(s string) bool {
		return strings.Contains(s, "Plan 1/3") && strings.Contains(s, "✓ update_plan 3 entries")
	})
	for _, want := range []string{"✓ update_plan 3 entries", "✓ write the notes", "▸ edit the notes (high)", "○ ship it"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the plan lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "Allow update_plan?") {
		t.Fatalf("update_plan asked for approval:\n%s", screen)
	}

	// /mode: the picker, full chosen, the status line says so.
	p.typeText("/mode")
	p.keys("Enter")
	p.waitScreen("the mode picker on supervised", func(s string) bool {
		return strings.Contains(s, "Mode —") && strings.Contains(selectedRow(s), "supervised")
	})
	p.keys("Down")
	p.waitScreen("full selected", func(s string) bool { return strings.Contains(selectedRow(s), "full") })
	p.keys("Enter")
	p.waitStatus("· echo · full ·")
	p.waitFor("mode: full")

	// /model: the picker lists the configured models; echo-large chosen.
	p.typeText("/model")
	p.keys("Enter")
	p.waitScreen("the model picker on echo", func(s string) bool {
		return strings.Contains(s, "Model (from config)") && strings.Contains(s, "echo-large") &&
			strings.Contains(selectedRow(s), "echo") && !strings.Contains(selectedRow(s), "echo-large")
	})
	p.keys("Down")
	p.waitScreen("echo-large selected", func(s string) bool { return strings.Contains(selectedRow(s), "echo-large") })
	p.keys("Enter")
	p.waitStatus("· echo-large · full ·")

	// /title: the status line shows it.
	p.typeText("/title Controls tour")
	p.keys("Enter")
	p.waitStatus(" Controls tour · default · echo-large · full")

	// A long prompt, then /compact: the summary is smaller and replaces the context.
	var words []string
	for i := range 60 {
		words = append(words, fmt.Sprintf("word%d", i))
	}
	p.typeText(strings.Join(words, " "))
	p.keys("Enter")
	p.waitFor("echo: word0 word1")
	p.waitScreen("the turn ended", func(s string) bool { return !strings.Contains(statusLine(s), "working") })
	p.typeText("/compact")
	p.keys("Enter")
	screen = p.waitScreen("the compaction's outcome", func(s string) bool {
		return strings.Contains(s, "context compacted: ") || strings.Contains(s, "compacting:") || strings.Contains(s, "not compacted")
	})
	if !regexp.MustCompile(`context compacted: \d+ → \d+ characters`).MatchString(screen) {
		t.Fatalf("/compact did not compact:\n%s", screen)
	}
	p.waitScreen("the context estimated after the compaction", func(s string) bool {
		return regexp.MustCompile(`ctx ~\d+/32k`).MatchString(statusLine(s))
	})

	// /sessions: f forks the open session; the fork shows the transcript and keeps
	// the controls.
	p.typeText("/sessions")
	p.keys("Enter")
	p.waitScreen("the picker on the session", func(s string) bool {
		return strings.Contains(s, "Sessions —") && strings.Contains(selectedRow(s), "Controls tour")
	})
	p.keys("f")
	screen = p.waitFor(`forked from "Controls tour"`)
	p.waitFor("echo: word0 word1")
	p.waitStatus(" Controls tour · default · echo-large · full")
	if strings.Contains(screen, "Sessions —") {
		t.Fatalf("the picker stayed open after the fork:\n%s", screen)
	}
	// r renames the fork (the open session now); the source keeps its title.
	p.typeText("/sessions")
	p.keys("Enter")
	p.waitScreen("the picker with both sessions", func(s string) bool {
		return pickerRows(s, "Controls tour") == 2 && strings.Contains(selectedRow(s), "●")
	})
	p.keys("r")
	p.waitFor("new title: █")
	p.typeText("Forked tour")
	p.waitFor("new title: Forked tour█")
	p.keys("Enter")
	p.waitStatus(" Forked tour · default")
	screen = p.waitScreen("the picker's rows renamed", func(s string) bool {
		return strings.Contains(selectedRow(s), "Forked tour") && pickerRows(s, "Controls tour") == 1
	})
	p.keys("q")
	p.waitScreen("the picker closed", func(s string) bool { return !strings.Contains(s, "Sessions —") })

	// The fork is a session of its own: a prompt there answers, and the status line
	// shows its context.
	p.typeText("in the fork")
	p.keys("Enter")
	p.waitFor("echo: in the fork")
	p.waitScreen("the fork's context", func(s string) bool {
		return regexp.MustCompile(`ctx \d+/32k`).MatchString(statusLine(s))
	})

	// Back to the source, then resumed again, the fork shows the rows it copied
	// (which have no updates to replay) before its own turn.
	p.typeText("/sessions")
	p.keys("Enter")
	p.pickRow("Controls tour")
	p.keys("Enter")
	p.waitStatus(" Controls tour · default · echo-large · full")
	p.typeText("/sessions")
	p.keys("Enter")
	p.pickRow("Forked tour")
	p.keys("Enter")
	p.waitStatus(" Forked tour · default · echo-large · full")
	// The replay shows the fork's own turn as it arrives; the copied rows are read
	// from session/messages once the replay is done, and put before it.
	p.waitScreen("the resumed fork's copied rows before its own turn", func(s string) bool {
		i, j := strings.Index(s, "echo: word0 word1"), strings.Index(s, "› in the fork")
		return i >= 0 && j > i && strings.Contains(s, "echo: in the fork")
	})
}

// pickRow moves the open picker's cursor (▸) to the row containing s.
func (p *tmuxPane) pickRow(s string) {
	p.t.Helper()
	screen := p.waitScreen("the picker with "+s, func(screen string) bool { return pickerRows(screen, s) > 0 && selectedRow(screen) != "" })
	lines := strings.Split(screen, "\n")
	row, cur := -1, -1
	for i, l := range lines {
		if strings.HasPrefix(l, "│ ") && strings.Contains(l, s) && row < 0 {
			row = i
		}
		if strings.Contains(l, "│ ▸") {
			cur = i
		}
	}
	key := "Down"
	if row < cur {
		key = "Up"
	}
	for range max(row-cur, cur-row) {
		p.keys(key)
	}
	p.waitScreen(s+" selected", func(screen string) bool { return strings.Contains(selectedRow(screen), s) })
}

// pickerRows counts the picker's rows (inside the overlay's border) that contain s.
func pickerRows(screen, s string) int {
	n := 0
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "│ ") && strings.Contains(l, s) && !strings.Contains(l, "Sessions —") {
			n++
		}
	}
	return n
}

// captureEscapes returns the pane's screen with its colours (escape sequences).
func (p *tmuxPane) captureEscapes() string {
	p.t.Helper()
	out, err := exec.Command("tmux", "-S", p.socket, "capture-pane", "-e", "-p", "-t", "tui").CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux capture-pane -e: %v\n%s", err, out)
	}
	return string(out)
}

// fgBefore is the foreground colour (an SGR 38;… or 3x parameter, "default" for 39
// or a reset) in force where text first starts on a line of an escaped screen, ""
// when text is not there.
func fgBefore(screen, text string) string {
	for _, line := range strings.Split(screen, "\n") {
		i := strings.Index(line, text)
		if i < 0 {
			continue
		}
		fg := "default"
		for _, seq := range regexp.MustCompile(`\x1b\[([0-9;:]*)m`).FindAllStringSubmatch(line[:i], -1) {
			params := strings.Split(seq[1], ";")
			for k := 0; k < len(params); k++ {
				switch v := params[k]; {
				case v == "" || v == "0" || v == "39":
					fg = "default"
				case v == "38" && k+2 < len(params) && params[k+1] == "5":
					fg, k = "38;5;"+params[k+2], k+2
				case v == "38" && k+4 < len(params) && params[k+1] == "2":
					fg, k = "38;2;"+strings.Join(params[k+2:k+5], ";"), k+4
				case len(v) == 2 && (v[0] == '3' || v[0] == '9') && v[1] >= '0' && v[1] <= '7':
					fg = v
				}
			}
		}
		return fg
	}
	return ""
}
