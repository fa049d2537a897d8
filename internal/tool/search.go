package tool

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Caps of search.
const (
	MaxSearchResults   = 200      // matches shown at most
	MaxSearchFileBytes = 10 << 20 // a bigger file is not searched (and the answer says how many were skipped)
	MaxSearchLineBytes = 500      // a longer matching line is cut
	binarySniffBytes   = 8000     // a NUL byte in the first this many makes a file binary, as git decides
)

// Search is the search tool: a regular expression over the text files of the
// workspace, line by line, with .gitignore respected.
type Search struct{}

func (Search) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameSearch,
		Description: "Search the text files of the workspace for a regular expression (Go RE2 syntax; " +
			"(?i) for case-insensitive), line by line. Files and directories that .gitignore excludes, " +
			"the .git directory and binary files are skipped; symbolic links are not followed. " +
			"Answers one match per line as path:line: text, at most 200 matches, and says when there are more.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression to look for in each line."},
    "path": {"type": "string", "description": "A directory or file to search, relative to the workspace. Defaults to \".\"."},
    "glob": {"type": "string", "description": "Only search files matching this glob: with a \"/\" it matches the path relative to the workspace (\"src/**/*.go\"), without one the file name (\"*.go\")."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 200, "description": "At most this many matches (1-200). Default 200."}
  },
  "required": ["pattern"]
}`),
	}
}

func (Search) Mutates() bool { return false }

// searcher is one search call.
type searcher struct {
	ctx     context.Context
	fsys    fs.FS
	re      *regexp.Regexp
	glob    string
	limit   int
	out     strings.Builder
	found   int
	cut     bool // a match past the limit was found
	large   int  // files skipped for their size
	failed  int  // files or directories that could not be read
	scanned int
}

// errEnough ends the walk once a match past the limit is found.
var errEnough = errors.New("enough matches")

func (Search) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		MaxResults *int   `json:"max_results"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	if a.Pattern == "" {
		return failure("invalid arguments: pattern is required")
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return failure("invalid arguments: pattern is not a valid regular expression: %v", err)
	}
	if a.Glob != "" && !doublestar.ValidatePattern(a.Glob) {
		return failure("invalid arguments: glob %q is not a valid pattern", a.Glob)
	}
	limit := MaxSearchResults
	if a.MaxResults != nil {
		if *a.MaxResults < 1 {
			return failure("invalid arguments: max_results is %d; it must be at least 1", *a.MaxResults)
		}
		limit = min(*a.MaxResults, MaxSearchResults)
	}
	if a.Path == "" {
		a.Path = "."
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	r, rel, err := openWorkspace(env.Workspace, a.Path)
	if err != nil {
		return failure("%v", err)
	}
	defer r.Close()
	s := &searcher{ctx: ctx, fsys: r.FS(), re: re, glob: a.Glob, limit: limit}
	start := filepath.ToSlash(rel)
	fi, err := fs.Stat(s.fsys, start)
	if err != nil {
		return failure("cannot search %q: %s", a.Path, errText(err))
	}
	if fi.IsDir() {
		err = s.walk(start, s.ancestorRules(start))
	} else {
		err = s.file(start, fi.Size())
	}
	switch {
	case errors.Is(err, errEnough):
	case ctx.Err() != nil:
		return failure("cancelled")
	case err != nil:
		return failure("cannot search %q: %s", a.Path, errText(err))
	}
	return s.result()
}

// ancestorRules are the .gitignore rules of the directories above dir, from the
// workspace down: they apply inside dir as they would to a search of everything.
func (s *searcher) ancestorRules(dir string) []ignoreRule {
	if dir == "." {
		return nil
	}
	rules := readIgnore(s.fsys, ".")
	parts := strings.Split(dir, "/")
	for i := 1; i < len(parts); i++ {
		rules = append(rules, readIgnore(s.fsys, strings.Join(parts[:i], "/"))...)
	}
	return rules
}

// walk searches directory dir (slash-separated, relative to the workspace) under
// the rules of the directories above it, in name order.
func (s *searcher) walk(dir string, rules []ignoreRule) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	rules = append(rules[:len(rules):len(rules)], readIgnore(s.fsys, dir)...)
	entries, err := fs.ReadDir(s.fsys, dir)
	if err != nil {
		s.failed++ // what could be read is searched still
	}
	for _, e := range entries {
		child := path.Join(dir, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			continue // not followed: a link's target is searched where it lies, if inside
		case e.IsDir():
			if e.Name() == ".git" || ignored(rules, child, true) {
				continue
			}
			if err := s.walk(child, rules); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if ignored(rules, child, false) || !s.wanted(child) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				s.failed++
				continue
			}
			if err := s.file(child, info.Size()); err != nil {
				return err
			}
		}
	}
	return nil
}

// wanted reports whether file rel passes the glob filter.
func (s *searcher) wanted(rel string) bool {
	if s.glob == "" {
		return true
	}
	if strings.Contains(s.glob, "/") {
		return doublestar.MatchUnvalidated(s.glob, rel)
	}
	return doublestar.MatchUnvalidated(s.glob, path.Base(rel))
}

// file searches one file. Binary files are skipped quietly, as grep does.
func (s *searcher) file(rel string, size int64) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if size > MaxSearchFileBytes {
		s.large++
		return nil
	}
	f, err := s.fsys.Open(rel)
	if err != nil {
		s.failed++
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSearchFileBytes+1))
	f.Close()
	switch {
	case err != nil:
		s.failed++
		return nil
	case len(data) > MaxSearchFileBytes:
		s.large++
		return nil
	case bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0:
		return nil
	}
	s.scanned++
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !s.re.Match(line) {
			continue
		}
		if s.found == s.limit {
			s.cut = true
			return errEnough
		}
		s.found++
		s.show(rel, n, line)
	}
	return nil
}

// show adds one match as path:line: text.
func (s *searcher) show(rel string, n int, line []byte) {
	cut := len(line) > MaxSearchLineBytes
	if cut {
		line = line[:MaxSearchLineBytes]
	}
	text, _ := validText(line, cut)
	name, _ := validText([]byte(rel), false)
	fmt.Fprintf(&s.out, "%s:%d: %s", name, n, text)
	if cut {
		s.out.WriteString(" […]")
	}
	s.out.WriteByte('\n')
}

func (s *searcher) result() Result {
	out := strings.TrimSuffix(s.out.String(), "\n")
	if s.found == 0 {
		out = fmt.Sprintf("no matches (%d files searched)", s.scanned)
	}
	if s.cut {
		out = withNote(out, fmt.Sprintf("[stopped at %d matches; there are more: narrow the pattern, path or glob]", s.limit))
	}
	if s.large > 0 {
		out = withNote(out, fmt.Sprintf("[%d files over %d bytes were not searched]", s.large, MaxSearchFileBytes))
	}
	if s.failed > 0 {
		out = withNote(out, fmt.Sprintf("[%d files or directories could not be read]", s.failed))
	}
	return Result{Output: out, Truncated: s.cut}
}
