package tui

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"sort"
	"strings"

	"charm.land/glamour/v2"
	"charm.land/glamour/v2/styles"
	"github.com/charmbracelet/x/ansi"
)

// renderer renders blocks: markdown through Glamour (one renderer per width), tool
// cards, thoughts and notices.
type renderer struct {
	th       theme
	md       map[int]*glamour.TermRenderer
	expanded bool // Ctrl-O: tool output and thoughts unfolded
	spin     string
}

// foldLines is how many lines of a tool's output a folded card shows.
const foldLines = 10

func newRenderer(th theme) *renderer { return &renderer{th: th, md: map[int]*glamour.TermRenderer{}} }

func (r *renderer) markdown(s string, width int) []string {
	tr := r.md[width]
	if tr == nil {
		if len(r.md) >= 8 { // a window resized many times: keep the renderers few
			clear(r.md)
		}
		// NO_COLOR keeps the styles: the program's colour profile drops the
		// colours and keeps bold, italic and the layout.
		style := styles.DarkStyle
		if !r.th.dark {
			style = styles.LightStyle
		}
		var err error
		tr, err = glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(max(10, width-2)))
		if err != nil {
			return wrap(s, width)
		}
		r.md[width] = tr
	}
	out, err := tr.Render(s)
	if err != nil {
		return wrap(s, width)
	}
	lines := strings.Split(strings.TrimRight(out, "\n "), "\n")
	for len(lines) > 0 && strings.TrimSpace(stripANSI(lines[0])) == "" {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// render renders one block at width.
func (r *renderer) render(b *block, width int) []string {
	th := r.th
	switch b.kind {
	case blockUser:
		lines := wrap(b.text.String(), max(1, width-2))
		for i, l := range lines {
			if i == 0 {
				lines[i] = th.user.Render("› ") + th.bold.Render(l)
			} else {
				lines[i] = "  " + th.bold.Render(l)
			}
		}
		return lines
	case blockAssistant:
		return r.reply(b, width)
	case blockThought:
		text := strings.TrimSpace(b.text.String())
		lines := wrap(text, max(1, width-2))
		if !r.expanded && len(lines) > 1 {
			return []string{th.faint.Render(fmt.Sprintf("∴ thinking (%d lines, Ctrl-O unfolds)", len(lines)))}
		}
		for i, l := range lines {
			lines[i] = th.faint.Render("∴ " + l)
		}
		return lines
	case blockTool:
		return r.toolCard(b.tool, width)
	case blockError:
		return styled(wrap(b.text.String(), width), th.errorText)
	default:
		return styled(wrap(b.text.String(), width), th.notice)
	}
}

func styled(lines []string, st interface{ Render(...string) string }) []string {
	for i, l := range lines {
		lines[i] = st.Render(l)
	}
	return lines
}

// argsSummary shows a tool's arguments in one line: the values of a flat object, or
// the JSON itself.
func argsSummary(raw jsontext.Value) string {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || len(obj) == 0 {
		return strings.TrimSpace(string(raw))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	// What a call is about comes first: its path, command, pattern or question.
	rank := func(k string) int {
		for i, first := range []string{"path", "command", "pattern", "question"} {
			if k == first {
				return i
			}
		}
		return 9
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		var v string
		switch x := obj[k].(type) {
		case string:
			v = x
		default:
			b, _ := json.Marshal(x)
			v = string(b)
		}
		if len(keys) == 1 {
			parts = append(parts, v)
		} else {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.ReplaceAll(strings.Join(parts, " "), "\n", "⏎")
}

// stripANSI removes escape sequences (for tests and blank-line checks).
func stripANSI(s string) string { return ansi.Strip(s) }

// segmentBytes is the length from which a reply is rendered in segments.
const segmentBytes = 4096

// reply renders a reply's markdown. A long one is rendered in segments cut at blank
// lines outside code blocks; segments already rendered are kept, so each frame of a
// streaming reply renders only the text after the last cut.
func (r *renderer) reply(b *block, width int) []string {
	text := b.text.String()
	if len(text) < segmentBytes {
		return r.markdown(text, width)
	}
	if b.segWidth != width {
		b.segLines, b.segEnd, b.segWidth = nil, 0, width
	}
	if cut := stableCut(text, b.segEnd); cut > b.segEnd {
		seg := r.markdown(text[b.segEnd:cut], width)
		if len(b.segLines) > 0 && len(seg) > 0 {
			b.segLines = append(b.segLines, "")
		}
		b.segLines = append(b.segLines, seg...)
		b.segEnd = cut
	}
	out := append([]string(nil), b.segLines...)
	if tail := text[b.segEnd:]; strings.TrimSpace(tail) != "" {
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, r.markdown(tail, width)...)
	}
	return out
}

// stableCut returns the end of the last blank line after from that is outside a
// code fence (from itself when there is none), with the fences counted from from.
func stableCut(text string, from int) int {
	cut, fenced := from, false
	pos := from
	for pos < len(text) {
		nl := strings.IndexByte(text[pos:], '\n')
		if nl < 0 {
			break
		}
		line := strings.TrimSpace(text[pos : pos+nl])
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fenced = !fenced
		}
		pos += nl + 1
		if line == "" && !fenced && pos-from > 1 {
			cut = pos
		}
	}
	return cut
}
