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
	// While scrolled up, the window's top line is anchored (block index, line in
	// it), so lines streaming in below do not move what is read.
	anchored               bool
	anchorBlock, anchorOff int
}

// follow goes back to the bottom, following the stream.
func (t *transcript) follow() { t.scroll, t.anchored = 0, false }

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
	t.blocks, t.atTop = nil, false
	t.follow()
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
	lineOf := func(i int) []string {
		b := t.blocks[i]
		if b.dirty || b.width != width || b.lines == nil {
			b.lines, b.width, b.dirty = render(b, width), width, false
		}
		return b.lines
	}
	sep := func(i int) int { // the blank line above every block but the first
		if i > 0 {
			return 1
		}
		return 0
	}
	if t.anchored && t.scroll > 0 && t.anchorBlock < len(t.blocks) {
		// Lines from the anchor's top to the end, minus the window: the scroll.
		below := len(lineOf(t.anchorBlock))
		for i := len(t.blocks) - 1; i > t.anchorBlock; i-- {
			below += len(lineOf(i)) + sep(i)
		}
		t.scroll = max(0, below-t.anchorOff-height)
	}
	need := t.scroll + height
	// Gather blocks from the bottom up, newest first, until the window is covered.
	got := 0
	i := len(t.blocks) - 1
	for ; i >= 0 && got < need; i-- {
		got += len(lineOf(i)) + sep(i)
	}
	first := i + 1
	t.atTop = i < 0 && got <= need
	if t.atTop && t.scroll > 0 && got < need {
		t.scroll = max(0, got-height) // past the top: the first page
	}
	all := make([]string, 0, got)
	starts := make([]int, 0, len(t.blocks)-first) // index in all of each block's first line
	for j := first; j < len(t.blocks); j++ {
		if sep(j) == 1 {
			all = append(all, "")
		}
		starts = append(starts, len(all))
		all = append(all, t.blocks[j].lines...)
	}
	end := len(all) - t.scroll
	start := max(0, end-height)
	if t.scroll > 0 && len(starts) > 0 {
		// Anchor the top line: the last block starting at or above it.
		k := 0
		for k+1 < len(starts) && starts[k+1] <= start {
			k++
		}
		t.anchored, t.anchorBlock, t.anchorOff = true, first+k, start-starts[k]
	} else {
		t.anchored = false
	}
	out := append([]string(nil), all[start:end]...)
	if len(out) < height { // a short transcript sits at the top
		out = append(out, make([]string, height-len(out))...)
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
	t.anchored = false // the next window anchors anew
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
