package tool

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// searchTree is a workspace with nested .gitignore files, a binary file, a link
// out and a .git directory.
func searchTree(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".gitignore":          "# build output\n*.log\n/build/\nnode_modules/\n!keep.log\ndocs/**/*.tmp\nliteral{a,b}.txt\n",
		"main.go":             "package main\n\nfunc main() { needle() }\n",
		"a.log":               "needle in a log\n",
		"keep.log":            "needle kept\n",
		"build/out.txt":       "needle built\n",
		"src/build/gen.go":    "needle in src/build: /build/ is anchored to the root\n",
		"node_modules/m/i.js": "needle\n",
		"src/lib.go":          "// Needle in caps\nvar x = \"needle\"\r\n",
		"src/.gitignore":      "secret.txt\n!a.log\n",
		"src/secret.txt":      "needle secret\n",
		"src/a.log":           "needle re-included below\n",
		"docs/x/y.tmp":        "needle tmp\n",
		"docs/x/y.md":         "needle md\n",
		"literal{a,b}.txt":    "needle literal braces\n",
		"literala.txt":        "needle literal a\n",
		"bin.dat":             "needle\x00binary\n",
		".git/config":         "needle in git\n",
		"deep/er/still/f.txt": "no match here\nneedle deep\n",
		"unicode.txt":         "héllo needle ✓\n",
		"invalid.txt":         "needle \xff\n",
	})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"o.txt": "needle outside\n"})
	symlink(t, outside, filepath.Join(ws, "out"))
	symlink(t, filepath.Join(outside, "o.txt"), filepath.Join(ws, "o-link.txt"))
	return ws
}

func TestSearch(t *testing.T) {
	ws := searchTree(t)
	tests := []struct {
		name    string
		args    string
		want    []string // the match lines, in order
		wantErr string
	}{
		{name: "everything not ignored", args: `{"pattern":"needle"}`, want: []string{
			"deep/er/still/f.txt:2: needle deep",
			"docs/x/y.md:1: needle md",
			"invalid.txt:1: needle \uFFFD",
			"keep.log:1: needle kept",
			"literala.txt:1: needle literal a",
			"main.go:3: func main() { needle() }",
			"src/a.log:1: needle re-included below",
			"src/build/gen.go:1: needle in src/build: /build/ is anchored to the root",
			`src/lib.go:2: var x = "needle"`,
			"unicode.txt:1: héllo needle ✓",
		}},
		{name: "case-insensitive", args: `{"pattern":"(?i)^// needle","path":"src"}`, want: []string{"src/lib.go:1: // Needle in caps"}},
		{name: "a subdirectory keeps the rules above it", args: `{"pattern":"needle","path":"src"}`, want: []string{
			"src/a.log:1: needle re-included below",
			"src/build/gen.go:1: needle in src/build: /build/ is anchored to the root",
			`src/lib.go:2: var x = "needle"`,
		}},
		{name: "a glob on names", args: `{"pattern":"needle","glob":"*.go"}`, want: []string{
			"main.go:3: func main() { needle() }",
			"src/build/gen.go:1: needle in src/build: /build/ is anchored to the root",
			`src/lib.go:2: var x = "needle"`,
		}},
		{name: "a glob on paths", args: `{"pattern":"needle","glob":"src/**/*.go"}`, want: []string{
			"src/build/gen.go:1: needle in src/build: /build/ is anchored to the root",
			`src/lib.go:2: var x = "needle"`,
		}},
		{name: "an explicit file is searched even if ignored", args: `{"pattern":"needle","path":"a.log"}`, want: []string{"a.log:1: needle in a log"}},
		{name: "an explicit ignored directory is searched", args: `{"pattern":"needle","path":"build"}`, want: []string{"build/out.txt:1: needle built"}},
		{name: "max_results cuts", args: `{"pattern":"needle","max_results":2}`, want: []string{
			"deep/er/still/f.txt:2: needle deep",
			"docs/x/y.md:1: needle md",
			"[stopped at 2 matches; there are more: narrow the pattern, path or glob]",
		}},
		{name: "exactly max_results is not cut", args: `{"pattern":"needle","path":"src","max_results":3}`, want: []string{
			"src/a.log:1: needle re-included below",
			"src/build/gen.go:1: needle in src/build: /build/ is anchored to the root",
			`src/lib.go:2: var x = "needle"`,
		}},
		{name: "no matches", args: `{"pattern":"haystack","path":"src"}`, want: []string{"no matches (4 files searched)"}},
		{name: "bad regexp", args: `{"pattern":"("}`, wantErr: "not a valid regular expression"},
		{name: "bad glob", args: `{"pattern":"x","glob":"[a"}`, wantErr: "not a valid pattern"},
		{name: "no pattern", args: `{}`, wantErr: "pattern is required"},
		{name: "max_results zero", args: `{"pattern":"x","max_results":0}`, wantErr: "max_results is 0"},
		{name: "missing path", args: `{"pattern":"x","path":"nope"}`, wantErr: `cannot search "nope"`},
		{name: "dot-dot", args: `{"pattern":"x","path":".."}`, wantErr: "outside the workspace"},
		{name: "a link out", args: `{"pattern":"x","path":"out"}`, wantErr: "symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, Search{}, ws, tt.args)
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				return
			}
			mustOK(t, r)
			if got := strings.Split(r.Output, "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("output:\n%s\nwant:\n%s", r.Output, strings.Join(tt.want, "\n"))
			}
			if cut := strings.Contains(r.Output, "[stopped at"); r.Truncated != cut {
				t.Errorf("Truncated = %v", r.Truncated)
			}
		})
	}
}

func TestSearchCapsMatchesAndLines(t *testing.T) {
	ws := t.TempDir()
	var b strings.Builder
	for i := range MaxSearchResults + 50 {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	long := "hit " + strings.Repeat("é", MaxSearchLineBytes) // two bytes each: cut at a character
	writeFiles(t, ws, map[string]string{"many.txt": b.String(), "a-long.txt": long + "\n", "huge.txt": strings.Repeat("x", MaxSearchFileBytes+1)})
	r := mustOK(t, run(t, Search{}, ws, `{"pattern":"hit","max_results":1000}`))
	lines := strings.Split(r.Output, "\n")
	if len(lines) != MaxSearchResults+2 || !r.Truncated {
		t.Fatalf("%d lines (truncated %v), want %d matches, the cut note and the size note", len(lines), r.Truncated, MaxSearchResults)
	}
	if want := "a-long.txt:1: hit " + strings.Repeat("é", (MaxSearchLineBytes-4)/2) + " […]"; lines[0] != want {
		t.Errorf("long line shown as %q…, want %q…", lines[0][:40], want[:40])
	}
	if lines[MaxSearchResults-1] != fmt.Sprintf("many.txt:%d: hit %d", MaxSearchResults-1, MaxSearchResults-2) {
		t.Errorf("last match %q", lines[MaxSearchResults-1])
	}
	if lines[MaxSearchResults] != fmt.Sprintf("[stopped at %d matches; there are more: narrow the pattern, path or glob]", MaxSearchResults) ||
		lines[MaxSearchResults+1] != fmt.Sprintf("[1 files over %d bytes were not searched]", MaxSearchFileBytes) {
		t.Errorf("notes %q", lines[MaxSearchResults:])
	}
}

func TestGitignoreMatcher(t *testing.T) {
	rules := parseIgnore(".", []byte("# c\n\n*.o\n!important.o\n/root-only\ndir/\nsub/*.txt\n**/deep\na/**/z\nout/**\n\\#hash\nsp\\ \ntrail   \n[ab].c\n"))
	rules = append(rules, parseIgnore("pkg", []byte("local\n/anch\n"))...)
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"x.o", false, true}, {"d/e/x.o", false, true}, {"important.o", false, false},
		{"root-only", false, true}, {"d/root-only", false, false},
		{"dir", true, true}, {"dir", false, false}, {"x/dir", true, true},
		{"sub/a.txt", false, true}, {"sub/x/a.txt", false, false}, {"x/sub/a.txt", false, false},
		{"deep", true, true}, {"a/b/deep", false, true},
		{"a/z", false, true}, {"a/b/c/z", false, true},
		{"out", true, false}, {"out/x", false, true}, {"out/x/y", true, true},
		{"#hash", false, true}, {"sp ", false, true}, {"sp", false, false}, {"trail", false, true},
		{"a.c", false, true}, {"c.c", false, false},
		{"pkg/local", false, true}, {"pkg/x/local", false, true}, {"local", false, false},
		{"pkg/anch", false, true}, {"pkg/x/anch", false, false}, {"anch", false, false},
	}
	for _, tt := range tests {
		if got := ignored(rules, tt.path, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir %v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
}
