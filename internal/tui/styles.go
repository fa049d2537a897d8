package tui

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// theme holds the colours of the screen. With NO_COLOR every style is plain (bold and
// faint only), and the colours follow the terminal's background (dark or light).
type theme struct {
	noColor bool
	dark    bool

	faint, bold, user, errorText, notice lipgloss.Style
	toolName, toolArgs, ok, fail, wait   lipgloss.Style
	added, removed, hunk                 lipgloss.Style
	status, statusKey, overlay, selected lipgloss.Style
	planDone, planActive, planPending    lipgloss.Style
	border                               color.Color
}

func newTheme(dark, noColor bool) theme {
	t := theme{noColor: noColor, dark: dark}
	s := lipgloss.NewStyle
	t.faint = s().Faint(true)
	t.bold = s().Bold(true)
	if noColor {
		t.user = s().Bold(true)
		t.errorText = s().Bold(true)
		t.notice = s().Faint(true)
		t.toolName = s().Bold(true)
		t.toolArgs = s().Faint(true)
		t.ok, t.fail, t.wait = s(), s().Bold(true), s().Bold(true)
		t.added, t.removed, t.hunk = s(), s(), s().Faint(true)
		t.status = s().Reverse(true)
		t.statusKey = s().Reverse(true).Bold(true)
		t.overlay = s().Border(lipgloss.NormalBorder()).Padding(0, 1)
		t.selected = s().Reverse(true)
		t.planDone, t.planActive, t.planPending = s().Faint(true), s().Bold(true), s()
		return t
	}
	ld := lipgloss.LightDark(dark)
	accent := ld(lipgloss.Color("#5A3FC0"), lipgloss.Color("#A594F9"))
	green := ld(lipgloss.Color("#1A7F37"), lipgloss.Color("#56D364"))
	red := ld(lipgloss.Color("#CF222E"), lipgloss.Color("#FF7B72"))
	yellow := ld(lipgloss.Color("#9A6700"), lipgloss.Color("#E3B341"))
	grey := ld(lipgloss.Color("#6E7781"), lipgloss.Color("#8B949E"))
	bar := ld(lipgloss.Color("#E6E1F9"), lipgloss.Color("#2D2A3E"))
	t.border = accent
	t.user = s().Bold(true).Foreground(accent)
	t.errorText = s().Foreground(red)
	t.notice = s().Foreground(grey)
	t.toolName = s().Bold(true).Foreground(accent)
	t.toolArgs = s().Foreground(grey)
	t.ok, t.fail, t.wait = s().Foreground(green), s().Foreground(red), s().Foreground(yellow)
	t.added, t.removed, t.hunk = s().Foreground(green), s().Foreground(red), s().Foreground(grey)
	t.status = s().Background(bar)
	t.statusKey = s().Background(bar).Bold(true).Foreground(accent)
	t.overlay = s().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1)
	t.selected = s().Reverse(true)
	t.planDone, t.planActive, t.planPending = s().Foreground(green), s().Bold(true).Foreground(yellow), s().Foreground(grey)
	return t
}
