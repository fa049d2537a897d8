package mcp

import (
	"regexp"
	"strconv"
	"strings"
)

// MaxToolName is the longest tool name every provider accepts.
const MaxToolName = 64

var (
	toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	badNameChar     = regexp.MustCompile(`[^a-zA-Z0-9_-]`)
)

// ValidToolName reports whether name fits ^[a-zA-Z0-9_-]{1,64}$.
func ValidToolName(name string) bool { return toolNamePattern.MatchString(name) }

// sanitize replaces every character a tool name may not hold by '_'.
func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	return badNameChar.ReplaceAllString(s, "_")
}

// namer hands out the model's names of one server's tools: <server>__<tool>,
// sanitized, cut to 64 characters, and made unique with a _2, _3, … suffix.
type namer struct {
	prefix string
	taken  map[string]bool
}

func newNamer(server string) *namer {
	p := sanitize(server)
	if len(p) > 32 {
		p = p[:32]
	}
	return &namer{prefix: p + "__", taken: map[string]bool{}}
}

func (n *namer) name(tool string) string {
	base := n.prefix + sanitize(tool)
	if len(base) > MaxToolName {
		base = base[:MaxToolName]
	}
	name := base
	for i := 2; n.taken[name]; i++ {
		suffix := "_" + strconv.Itoa(i)
		name = base[:min(len(base), MaxToolName-len(suffix))] + suffix
	}
	n.taken[name] = true
	return name
}

// ServerOf returns the server prefix of a tool name made here, if it has one.
func ServerOf(toolName string) (string, bool) {
	s, _, ok := strings.Cut(toolName, "__")
	return s, ok && s != ""
}
