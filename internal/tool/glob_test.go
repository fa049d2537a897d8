package tool

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"main.go": "", "go.mod": "", "cmd/x/x.go": "", "cmd/x/x_test.go": "", "internal/a/b/c.go": "",
		"docs/readme.md": "", ".git/HEAD": "", ".git/hooks/h.go": "", "weird{1}.txt": "",
	})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"o.go": ""})
	symlink(t, outside, filepath.Join(ws, "out"))
	tests := []struct {
		name    string
		pattern string
		want    string
		wantErr string
	}{
		{name: "doublestar", pattern: "**/*.go", want: "cmd/x/x.go\ncmd/x/x_test.go\ninternal/a/b/c.go\nmain.go"},
		{name: "one level", pattern: "*.go", want: "main.go"},
		{name: "directories marked", pattern: "cmd/*", want: "cmd/x/"},
		{name: "alternatives", pattern: "{go.mod,docs/*.md}", want: "docs/readme.md\ngo.mod"},
		{name: "a class", pattern: "cmd/x/x[_]test.go", want: "cmd/x/x_test.go"},
		{name: "leading ./", pattern: "./cmd/x/*_test.go", want: "cmd/x/x_test.go"},
		{name: ".git when named", pattern: ".git/*", want: ".git/HEAD\n.git/hooks/"},
		{name: "nothing", pattern: "**/*.rs", want: `no paths match "**/*.rs"`},
		{name: "a link out is not followed", pattern: "out/*.go", want: `no paths match "out/*.go"`},
		{name: "escaped brace", pattern: `weird\{1\}.txt`, want: "weird{1}.txt"},
		{name: "dot-dot", pattern: "../*", wantErr: `has a ".."`},
		{name: "inner dot-dot", pattern: "cmd/../../*", wantErr: `has a ".."`},
		{name: "absolute", pattern: "/etc/*", wantErr: "is absolute"},
		{name: "bad", pattern: "[a", wantErr: "not a valid glob"},
		{name: "empty", pattern: "", wantErr: "pattern is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, Glob{}, ws, `{"pattern":`+jsonString(t, tt.pattern)+`}`)
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				return
			}
			if mustOK(t, r).Output != tt.want {
				t.Fatalf("output %q, want %q", r.Output, tt.want)
			}
		})
	}
}

func TestGlobCap(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range MaxGlobResults + 5 {
		files[fmt.Sprintf("d/f%04d.txt", i)] = ""
	}
	writeFiles(t, ws, files)
	r := mustOK(t, run(t, Glob{}, ws, `{"pattern":"**/*.txt"}`))
	lines := strings.Split(r.Output, "\n")
	if !r.Truncated || len(lines) != MaxGlobResults+1 || !strings.HasPrefix(lines[MaxGlobResults], "[truncated: more than 1000") {
		t.Fatalf("%d lines, truncated %v, last %q", len(lines), r.Truncated, lines[len(lines)-1])
	}
}
