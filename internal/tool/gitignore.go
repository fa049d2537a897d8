package tool

import (
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// A small .gitignore matcher, as gitignore(5) describes the format: blank lines and
// "#" comments are skipped, trailing spaces dropped unless escaped, "!" re-includes,
// a trailing "/" matches directories only, a pattern with a "/" elsewhere is
// anchored to its file's directory (else it matches a name at any depth below it),
// "*", "?" and "[…]" do not match "/", "**" matches any number of directories, and
// the last matching rule wins. A file inside an excluded directory is never
// considered (the search does not descend), so it cannot be re-included, as in git.
// Not read: .git/info/exclude and the user's core.excludesFile, which live outside
// the workspace's tree or are not project rules.

// maxIgnoreFile bounds the .gitignore a search reads; a bigger one is skipped.
const maxIgnoreFile = 1 << 20

// ignoreRule is one pattern of a .gitignore.
type ignoreRule struct {
	base     string // the .gitignore's directory, slash-separated, relative to the workspace ("." for it)
	pattern  string // a doublestar pattern
	anchored bool   // matched against the path below base; else against the name
	negate   bool
	dirOnly  bool
}

// parseIgnore parses the content of the .gitignore in directory base.
func parseIgnore(base string, data []byte) []ignoreRule {
	var rules []ignoreRule
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		r := ignoreRule{base: base}
		if line[0] == '!' {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			r.anchored, line = true, strings.TrimPrefix(line, "/")
		}
		r.pattern = globOfIgnore(line)
		if r.pattern == "" || !doublestar.ValidatePattern(r.pattern) {
			continue // git skips what it cannot parse too
		}
		rules = append(rules, r)
	}
	return rules
}

// globOfIgnore turns a gitignore pattern into a doublestar one: the two agree but
// for "{…}", which is literal in gitignore and alternatives in doublestar.
func globOfIgnore(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 == len(p) {
				return "" // a trailing backslash is invalid
			}
			b.WriteByte(c)
			i++
			b.WriteByte(p[i])
		case '{', '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ignored reports whether the rules exclude rel (slash-separated, relative to the
// workspace), a directory when isDir.
func ignored(rules []ignoreRule, rel string, isDir bool) bool {
	out := false
	for _, r := range rules {
		if r.dirOnly && !isDir {
			continue
		}
		if r.matches(rel) {
			out = !r.negate
		}
	}
	return out
}

func (r ignoreRule) matches(rel string) bool {
	below := rel
	if r.base != "." {
		var ok bool
		if below, ok = strings.CutPrefix(rel, r.base+"/"); !ok {
			return false // a .gitignore speaks only of what is below its directory
		}
	}
	if !r.anchored {
		return doublestar.MatchUnvalidated(r.pattern, path.Base(below))
	}
	if !doublestar.MatchUnvalidated(r.pattern, below) {
		return false
	}
	// "dir/**" matches what is inside dir, not dir itself (doublestar's "**" also
	// matches no directory at all).
	if dir, ok := strings.CutSuffix(r.pattern, "/**"); ok && doublestar.MatchUnvalidated(dir, below) {
		return false
	}
	return true
}

// readIgnore returns the rules of dir's .gitignore in fsys, none when it has none
// (or an unreadable or oversized one).
func readIgnore(fsys fs.FS, dir string) []ignoreRule {
	f, err := fsys.Open(path.Join(dir, ".gitignore"))
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIgnoreFile {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	return parseIgnore(dir, data)
}
