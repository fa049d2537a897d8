package tool

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFileLines(t *testing.T) {
	ws := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	longLine := strings.Repeat("z", 200<<10)
	writeFiles(t, ws, map[string]string{
		"ten.txt":   b.String(),
		"nonl.txt":  "a\nb\nc",
		"crlf.txt":  "a\r\nb\r\n",
		"long.txt":  "x\n" + longLine + "\nafter\n",
		"empty.txt": "",
	})
	tests := []struct {
		name    string
		args    string
		want    string
		wantErr string
	}{
		{name: "offset and limit", args: `{"path":"ten.txt","offset":3,"limit":2}`, want: "line 3\nline 4\n[lines 3-4 shown; the file goes on: continue with offset 5]"},
		{name: "offset to the end", args: `{"path":"ten.txt","offset":9}`, want: "line 9\nline 10\n"},
		{name: "limit from the start", args: `{"path":"ten.txt","limit":1}`, want: "line 1\n[lines 1-1 shown; the file goes on: continue with offset 2]"},
		{name: "limit past the end", args: `{"path":"ten.txt","offset":10,"limit":5}`, want: "line 10\n"},
		{name: "last line without a newline", args: `{"path":"nonl.txt","offset":3}`, want: "c"},
		{name: "CRLF kept", args: `{"path":"crlf.txt","offset":2}`, want: "b\r\n"},
		{name: "a long line is skipped whole", args: `{"path":"long.txt","offset":3}`, want: "after\n"},
		{name: "a long line is read whole", args: `{"path":"long.txt","offset":2,"limit":1}`, want: longLine + "\n[lines 2-2 shown; the file goes on: continue with offset 3]"},
		{name: "empty file", args: `{"path":"empty.txt","offset":1}`, want: ""},
		{name: "past the end", args: `{"path":"ten.txt","offset":12}`, wantErr: `offset 12 is past the end of "ten.txt": it has 10 lines`},
		{name: "just past the end", args: `{"path":"ten.txt","offset":11}`, wantErr: "it has 10 lines"},
		{name: "past the end without a newline", args: `{"path":"nonl.txt","offset":5}`, wantErr: "it has 3 lines"},
		{name: "offset zero", args: `{"path":"ten.txt","offset":0}`, wantErr: "offset is 0; lines count from 1"},
		{name: "negative limit", args: `{"path":"ten.txt","limit":-1}`, wantErr: "limit is -1"},
		{name: "offset of the wrong type", args: `{"path":"ten.txt","offset":"3"}`, wantErr: "invalid arguments: "},
		{name: "fractional offset", args: `{"path":"ten.txt","offset":1.5}`, wantErr: "invalid arguments: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, ReadFile{}, ws, tt.args)
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				return
			}
			if mustOK(t, r).Output != tt.want {
				t.Fatalf("output %q, want %q", head(r.Output), head(tt.want))
			}
		})
	}
}

func TestReadFileLinesCap(t *testing.T) {
	ws := t.TempDir()
	line := strings.Repeat("a", 1000) + "\n"
	writeFiles(t, ws, map[string]string{"big.txt": "skip\n" + strings.Repeat(line, MaxReadBytes/len(line)+10)})
	r := mustOK(t, run(t, ReadFile{}, ws, `{"path":"big.txt","offset":2}`))
	if !r.Truncated || !strings.HasSuffix(r.Output, fmt.Sprintf("[truncated: at most %d bytes are shown; line %d is cut]", MaxReadBytes, 2+MaxReadBytes/len(line))) {
		t.Fatalf("truncated %v, ends %q", r.Truncated, tail(r.Output))
	}
	if strings.Contains(r.Output, "skip") || len(r.Output) > MaxReadBytes+200 {
		t.Fatalf("output of %d bytes shows the skipped line or too much", len(r.Output))
	}
}

func TestLocations(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "one\ntwo\nthree\n", "dir/b.txt": ""})
	outside := t.TempDir()
	symlink(t, outside, filepath.Join(ws, "out"))
	env := Env{Workspace: ws}
	abs := func(p string) string { return filepath.Join(ws, filepath.FromSlash(p)) }
	tests := []struct {
		name string
		tool Locator
		args string
		want []Location
	}{
		{"read_file", ReadFile{}, `{"path":"a.txt"}`, []Location{{Path: abs("a.txt")}}},
		{"read_file at an offset", ReadFile{}, `{"path":"a.txt","offset":2}`, []Location{{Path: abs("a.txt"), Line: 2}}},
		{"write_file of a new file", WriteFile{}, `{"path":"new/c.txt","content":""}`, []Location{{Path: abs("new/c.txt")}}},
		{"edit_file at its line", EditFile{}, `{"path":"a.txt","old_text":"three","new_text":"3"}`, []Location{{Path: abs("a.txt"), Line: 3}}},
		{"edit_file not matching", EditFile{}, `{"path":"a.txt","old_text":"four","new_text":"4"}`, []Location{{Path: abs("a.txt")}}},
		{"list_dir default", ListDir{}, `{}`, []Location{{Path: ws}}},
		{"search in a directory", Search{}, `{"pattern":"x","path":"dir"}`, []Location{{Path: abs("dir")}}},
		{"glob", Glob{}, `{"pattern":"**"}`, []Location{{Path: ws}}},
		{"outside", ReadFile{}, `{"path":"../x"}`, []Location{}},
		{"a link out", WriteFile{}, `{"path":"out/x","content":""}`, []Location{}},
		{"no path", ReadFile{}, `{}`, []Location{}},
		{"bad arguments", EditFile{}, `[1]`, []Location{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tool.Locations(env, []byte(tt.args))
			if got == nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("Locations = %#v, want %#v", got, tt.want)
			}
		})
	}
}
