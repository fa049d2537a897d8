package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	ws := t.TempDir()
	big := strings.Repeat("a", MaxReadBytes) + "TAIL"
	// A two-byte character straddling the cap: it must be cut whole, not mangled.
	straddle := strings.Repeat("a", MaxReadBytes-1) + "é" + "after"
	writeFiles(t, ws, map[string]string{
		"hello.txt":    "hello\nworld\n",
		"empty.txt":    "",
		"dir/x.txt":    "x",
		"big.txt":      big,
		"straddle.txt": straddle,
		"binary.bin":   "ab\xff\xfecd",
		"utf8.txt":     "héllo ✓",
	})
	tests := []struct {
		name          string
		args          string
		want          string // exact output, unless prefix is set
		prefix        string
		suffix        string
		wantErr       string
		wantTruncated bool
	}{
		{name: "text", args: `{"path":"hello.txt"}`, want: "hello\nworld\n"},
		{name: "absolute inside", args: `{"path":` + jsonString(t, filepath.Join(ws, "hello.txt")) + `}`, want: "hello\nworld\n"},
		{name: "empty file", args: `{"path":"empty.txt"}`, want: ""},
		{name: "nested", args: `{"path":"dir/x.txt"}`, want: "x"},
		{name: "valid UTF-8 untouched", args: `{"path":"utf8.txt"}`, want: "héllo ✓"},
		{name: "invalid UTF-8 replaced", args: `{"path":"binary.bin"}`,
			want: "ab\uFFFDcd\n[the file is not valid UTF-8 text: invalid bytes are shown as U+FFFD]"},
		{name: "over the cap", args: `{"path":"big.txt"}`, prefix: strings.Repeat("a", MaxReadBytes) + "\n",
			suffix: fmt.Sprintf("[truncated: the file has %d bytes; only the first %d are shown]", len(big), MaxReadBytes), wantTruncated: true},
		{name: "cap splits a character", args: `{"path":"straddle.txt"}`, prefix: strings.Repeat("a", MaxReadBytes-1) + "\n[truncated", wantTruncated: true},
		{name: "unknown members ignored", args: `{"path":"hello.txt","encoding":"utf-8"}`, want: "hello\nworld\n"},
		{name: "missing", args: `{"path":"nope.txt"}`, wantErr: `cannot read "nope.txt"`},
		{name: "directory", args: `{"path":"dir"}`, wantErr: "it is a directory"},
		{name: "no path", args: `{}`, wantErr: "invalid arguments: path is required"},
		{name: "no arguments", args: ``, wantErr: "invalid arguments: path is required"},
		{name: "path of the wrong type", args: `{"path":7}`, wantErr: "invalid arguments: "},
		{name: "path in the wrong case", args: `{"Path":"hello.txt"}`, wantErr: "invalid arguments: path is required"},
		{name: "not an object", args: `["hello.txt"]`, wantErr: "invalid arguments: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, ReadFile{}, ws, tt.args)
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				return
			}
			mustOK(t, r)
			if r.Truncated != tt.wantTruncated {
				t.Errorf("Truncated = %v, want %v", r.Truncated, tt.wantTruncated)
			}
			if tt.prefix == "" {
				if r.Output != tt.want {
					t.Fatalf("output %q, want %q", r.Output, tt.want)
				}
				return
			}
			if !strings.HasPrefix(r.Output, tt.prefix) || !strings.HasSuffix(r.Output, tt.suffix) {
				t.Fatalf("output %q…%q, want prefix %q… and suffix %q", head(r.Output), tail(r.Output), head(tt.prefix), tt.suffix)
			}
			if strings.Contains(r.Output, "TAIL") || strings.Contains(r.Output, "\uFFFD") {
				t.Fatalf("output shows bytes past the cap or a mangled character: …%q", tail(r.Output))
			}
		})
	}
}

func head(s string) string { return s[:min(len(s), 40)] }
func tail(s string) string { return s[max(0, len(s)-120):] }

func TestWriteFile(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"existing.txt": "old", "dir/keep": ""})
	tests := []struct {
		name    string
		args    string
		path    string // file to check, relative to ws
		want    string
		wantErr string
	}{
		{name: "new file", args: `{"path":"new.txt","content":"hello\n"}`, path: "new.txt", want: "hello\n"},
		{name: "replace", args: `{"path":"existing.txt","content":"new"}`, path: "existing.txt", want: "new"},
		{name: "empty content", args: `{"path":"empty.txt","content":""}`, path: "empty.txt", want: ""},
		{name: "nested directories created", args: `{"path":"a/b/c/deep.txt","content":"deep"}`, path: "a/b/c/deep.txt", want: "deep"},
		{name: "absolute inside", args: `{"path":` + jsonString(t, filepath.Join(ws, "abs.txt")) + `,"content":"abs"}`, path: "abs.txt", want: "abs"},
		{name: "unicode", args: `{"path":"u.txt","content":"héllo ✓"}`, path: "u.txt", want: "héllo ✓"},
		{name: "no path", args: `{"content":"x"}`, wantErr: "invalid arguments: path is required"},
		{name: "no content", args: `{"path":"x.txt"}`, wantErr: "invalid arguments: content is required"},
		{name: "null content", args: `{"path":"x.txt","content":null}`, wantErr: "invalid arguments: content is required"},
		{name: "content of the wrong type", args: `{"path":"x.txt","content":42}`, wantErr: "invalid arguments: "},
		{name: "duplicate member", args: `{"path":"x.txt","path":"y.txt","content":""}`, wantErr: "invalid arguments: "},
		{name: "the workspace itself", args: `{"path":".","content":"x"}`, wantErr: "it is the workspace directory"},
		{name: "an existing directory", args: `{"path":"dir","content":"x"}`, wantErr: "it is a directory"},
		{name: "a file as a directory", args: `{"path":"existing.txt/x","content":"x"}`, wantErr: `cannot write "existing.txt/x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, WriteFile{}, ws, tt.args)
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				return
			}
			mustOK(t, r)
			if want := fmt.Sprintf("wrote %d bytes to ", len(tt.want)); !strings.HasPrefix(r.Output, want) {
				t.Errorf("output %q, want it to start with %q", r.Output, want)
			}
			full := filepath.Join(ws, filepath.FromSlash(tt.path))
			got, err := os.ReadFile(full)
			if err != nil || string(got) != tt.want {
				t.Fatalf("file has %q, %v; want %q", got, err, tt.want)
			}
			if fi, err := os.Stat(full); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o644 {
				t.Fatalf("file mode %v, %v; want 0644", fi.Mode(), err)
			}
		})
	}
	// No temporary files are left behind, anywhere.
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
	if fi, err := os.Stat(filepath.Join(ws, "a", "b")); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o700 != 0o700 {
		t.Fatalf("created directory: %v, %v", fi, err)
	}
}

func TestWriteFileContentCap(t *testing.T) {
	ws := t.TempDir()
	atCap := strings.Repeat("x", MaxWriteBytes)
	mustOK(t, run(t, WriteFile{}, ws, `{"path":"at.txt","content":"`+atCap+`"}`))
	if fi, err := os.Stat(filepath.Join(ws, "at.txt")); err != nil || fi.Size() != MaxWriteBytes {
		t.Fatalf("file at the cap: %v, %v", fi, err)
	}
	mustFail(t, run(t, WriteFile{}, ws, `{"path":"over.txt","content":"`+atCap+`y"}`), "at most 10485760")
	if _, err := os.Stat(filepath.Join(ws, "over.txt")); !os.IsNotExist(err) {
		t.Fatalf("content over the cap was written: %v", err)
	}
}

func TestListDir(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"b.txt":          "",
		"a.txt":          "",
		"sub/inner.txt":  "",
		"Capital":        "",
		"zdir/x":         "",
		"sub/deeper/f.c": "",
	})
	if err := os.Mkdir(filepath.Join(ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    string
		want    string
		wantErr string
	}{
		{name: "default is the workspace", args: `{}`, want: "Capital\na.txt\nb.txt\nempty/\nsub/\nzdir/"},
		{name: "no arguments", args: ``, want: "Capital\na.txt\nb.txt\nempty/\nsub/\nzdir/"},
		{name: "dot", args: `{"path":"."}`, want: "Capital\na.txt\nb.txt\nempty/\nsub/\nzdir/"},
		{name: "subdirectory", args: `{"path":"sub"}`, want: "deeper/\ninner.txt"},
		{name: "absolute", args: `{"path":` + jsonString(t, filepath.Join(ws, "sub")) + `}`, want: "deeper/\ninner.txt"},
		{name: "empty directory", args: `{"path":"empty"}`, want: "(empty directory)"},
		{name: "a file", args: `{"path":"a.txt"}`, wantErr: "not a directory"},
		{name: "missing", args: `{"path":"nope"}`, wantErr: `cannot list "nope"`},
		{name: "path of the wrong type", args: `{"path":["sub"]}`, wantErr: "invalid arguments: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, ListDir{}, ws, tt.args)
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				return
			}
			if mustOK(t, r).Output != tt.want || r.Truncated {
				t.Fatalf("output %q (truncated %v), want %q", r.Output, r.Truncated, tt.want)
			}
		})
	}
}

func TestListDirCap(t *testing.T) {
	ws := t.TempDir()
	const n = MaxListEntries*2 + 345 // more than the 2n the listing holds at once
	for i := n - 1; i >= 0; i-- {    // created in reverse, so disk order is no help
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := mustOK(t, run(t, ListDir{}, ws, `{}`))
	if !r.Truncated {
		t.Error("Truncated not set")
	}
	lines := strings.Split(r.Output, "\n")
	if len(lines) != MaxListEntries+1 {
		t.Fatalf("%d lines, want %d names and a note", len(lines), MaxListEntries)
	}
	for i, l := range lines[:MaxListEntries] {
		if want := fmt.Sprintf("f%05d", i); l != want {
			t.Fatalf("line %d is %q, want %q", i, l, want)
		}
	}
	if want := fmt.Sprintf("[truncated: %d more entries not shown]", n-MaxListEntries); lines[MaxListEntries] != want {
		t.Fatalf("note %q, want %q", lines[MaxListEntries], want)
	}
}
