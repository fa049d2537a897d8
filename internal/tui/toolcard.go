package tui

import (
	"encoding/json/jsontext"
	"fmt"
	"strings"
)

// Tool card states.
const (
	toolRunning   = "running"
	toolApproval  = "awaiting approval"
	toolDone      = "done"
	toolFailed    = "failed"
	toolCancelled = "cancelled"
)

// toolCard is one tool call: what ran, with what, how it ended, what it said.
type toolCard struct {
	id, name string
	args     jsontext.Value
	state    string
	output   string
	progress string // the last tool_progress message
	diff     *fileDiff
}

// fileDiff is a tool_result's diff {path, oldText?, newText}.
type fileDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
}

func (r *renderer) toolCard(c *toolCard, width int) []string {
	th := r.th
	var mark string
	switch c.state {
	case toolRunning:
		mark = th.wait.Render(r.spin)
	case toolApproval:
		mark = th.wait.Render("?")
	case toolDone:
		mark = th.ok.Render("✓")
	case toolCancelled:
		mark = th.fail.Render("⊘")
	default:
		mark = th.fail.Render("✗")
	}
	head := mark + " " + th.toolName.Render(c.name) + " " + th.toolArgs.Render(clip(argsSummary(c.args), max(10, width-len(c.name)-4)))
	lines := []string{head}
	if c.state == toolApproval || c.state == toolRunning || (c.progress != "" && c.output == "") {
		status := c.state
		if c.progress != "" {
			status += ": " + c.progress
		}
		lines = append(lines, th.faint.Render("  "+clip(status, max(1, width-2))))
	}
	var body []string
	if c.diff != nil {
		body = r.diffLines(c.diff, width-2)
	} else if c.output != "" {
		for _, l := range wrap(strings.TrimRight(c.output, "\n"), max(1, width-4)) {
			st := th.faint
			if c.state == toolFailed {
				st = th.errorText
			}
			body = append(body, st.Render(l))
		}
	}
	if !r.expanded && len(body) > foldLines {
		hidden := len(body) - foldLines
		body = append(body[:foldLines:foldLines], th.faint.Render(fmt.Sprintf("… %d more lines (Ctrl-O unfolds)", hidden)))
	}
	for _, l := range body {
		lines = append(lines, "  "+th.faint.Render("│ ")+l)
	}
	return lines
}

// clip shortens s to n cells (runes), ending it with "…".
func clip(s string, n int) string {
	if n < 1 {
		n = 1
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// diffLines renders a file diff: the path, then the changed lines with three lines of
// context, removals red and additions green.
func (r *renderer) diffLines(d *fileDiff, width int) []string {
	th := r.th
	var old []string
	if d.OldText != nil && *d.OldText != "" {
		old = strings.Split(strings.TrimSuffix(*d.OldText, "\n"), "\n")
	}
	var nw []string
	if d.NewText != "" {
		nw = strings.Split(strings.TrimSuffix(d.NewText, "\n"), "\n")
	}
	title := "edited " + d.Path
	if d.OldText == nil {
		title = "created " + d.Path
	}
	out := []string{th.hunk.Render(clip(title, max(1, width)))}
	ops := lineDiff(old, nw)
	const context = 3
	keep := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind != ' ' {
			for j := max(0, i-context); j <= min(len(ops)-1, i+context); j++ {
				keep[j] = true
			}
		}
	}
	skipped := false
	for i, op := range ops {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped {
			out = append(out, th.hunk.Render("⋯"))
			skipped = false
		}
		text := clip(string(op.kind)+" "+op.text, max(1, width))
		switch op.kind {
		case '+':
			out = append(out, th.added.Render(text))
		case '-':
			out = append(out, th.removed.Render(text))
		default:
			out = append(out, th.faint.Render(text))
		}
	}
	return out
}

type diffOp struct {
	kind byte // ' ', '+', '-'
	text string
}

// lineDiff is a longest-common-subsequence diff of two line lists. Past 4 million
// cells it gives up on alignment and shows the old lines removed, the new added.
func lineDiff(a, b []string) []diffOp {
	// Trim the common head and tail first: most edits touch a few lines.
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var ops []diffOp
	for _, l := range a[:head] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	if len(ma)*len(mb) > 4_000_000 {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	} else {
		n, m := len(ma), len(mb)
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i]})
				i, j = i+1, j+1
			case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
				ops = append(ops, diffOp{'+', mb[j]})
				j++
			default:
				ops = append(ops, diffOp{'-', ma[i]})
				i++
			}
		}
	}
	for _, l := range a[len(a)-tail:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}
