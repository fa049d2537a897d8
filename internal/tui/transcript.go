package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// blockKind says what a transcript block shows.
type blockKind int

const (
	blockUser blockKind = iota
	blockAssistant
	blockThought
	blockTool
	blockNotice
	blockError
)

// block is one entry of the transcript. Its rendered lines are cached for the width
// they were rendered at; a change marks it dirty.
type block struct {
	kind   blockKind
	turnID string
	text   strings.Builder
	tool   *toolCard // blockTool

	lines []string
	width int
	dirty bool

	// A long reply's markdown is rendered in segments that end at a blank line
	// outside a code block: a streaming reply re-renders only its last segment.
	segLines []string
	segEnd   int // bytes of text rendered into segLines
	segWidth int
}

func (b *block) touch() { b.dirty = true }

// transcript is the list of blocks and the scroll position. Only the blocks that
// reach into the visible window are rendered: the window is found by walking from
// the newest block backwards, and scroll counts lines above the bottom.
type transcript struct {
	blocks []*block
	scroll int // lines scrolled up from the bottom; 0 follows the stream
	atTop  bool
}

func (t *transcript) add(b *block) *block {
	b.dirty = true
	t.blocks = append(t.blocks, b)
	return b
}

func (t *transcript) last() *block {
	if len(t.blocks) == 0 {
		return nil
	}
	return t.blocks[len(t.blocks)-1]
}

func (t *transcript) reset() {
	t.blocks, t.scroll, t.atTop = nil, 0, false
}

// renderFunc renders one block at a width.
type renderFunc func(b *block, width int) []string

// window returns the height lines shown at the current scroll position, rendering
// only the blocks it needs (newest first), with blank lines between blocks. It
// clamps scroll when the top of the transcript is reached.
func (t *transcript) window(width, height int, render renderFunc) []string {
	if height <= 0 {
		return nil
	}
	need := t.scroll + height
	// Gather lines from the bottom up, newest block first.
	var chunks [][]string
	got := 0
	i := len(t.blocks) - 1
	for ; i >= 0 && got < need; i-- {
		b := t.blocks[i]
		if b.dirty || b.width != width || b.lines == nil {
			b.lines, b.width, b.dirty = render(b, width), width, false
		}
		lines := b.lines
		if i > 0 {
			lines = append([]string{""}, lines...) // a blank line between blocks
		}
		chunks = append(chunks, lines)
		got += len(lines)
	}
	t.atTop = i < 0 && got <= need
	if t.atTop && t.scroll > 0 && got < need {
		// Scrolled past the top: show the first page.
		t.scroll = max(0, got-height)
	}
	all := make([]string, 0, got)
	for j := len(chunks) - 1; j >= 0; j-- {
		all = append(all, chunks[j]...)
	}
	end := len(all) - t.scroll
	start := max(0, end-height)
	out := all[start:end]
	if len(out) < height { // a short transcript sits at the top
		pad := make([]string, height-len(out))
		out = append(out, pad...)
	}
	for k, l := range out {
		if ansi.StringWidth(l) > width {
			out[k] = ansi.Truncate(l, width, "")
		}
	}
	return out
}

// scrollBy moves the window up (positive) or down (negative) by n lines.
func (t *transcript) scrollBy(n int) {
	if n > 0 && t.atTop {
		return
	}
	t.scroll = max(0, t.scroll+n)
	if n < 0 {
		t.atTop = false
	}
}

// wrap breaks s into lines of at most width cells.
func wrap(s string, width int) []string {
	if width < 1 {
		width = 1
	}
	return strings.Split(ansi.Wrap(s, width, ""), "\n")
}

func ansiWidth(s string) int { return ansi.StringWidth(s) }
