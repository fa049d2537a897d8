package tool

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestEditFile(t *testing.T) {
	tests := []struct {
		name     string
		file     string // content of f.txt before the call
		args     string
		want     string // content after a successful call
		wantOut  string
		wantErr  string
		unchaged bool
	}{
		{name: "one occurrence", file: "a\nhello world\nb\n", args: `{"path":"f.txt","old_text":"hello","new_text":"goodbye"}`,
			want: "a\ngoodbye world\nb\n", wantOut: "edited f.txt: replaced 1 occurrence at line 2"},
		{name: "multi-line old_text", file: "x\ny\nz\n", args: `{"path":"f.txt","old_text":"x\ny\n","new_text":""}`, want: "z\n"},
		{name: "delete with an empty new_text", file: "keep DROP keep", args: `{"path":"f.txt","old_text":" DROP","new_text":""}`, want: "keep keep"},
		{name: "replace_all", file: "a-a-a\nb\na", args: `{"path":"f.txt","old_text":"a","new_text":"c","replace_all":true}`,
			want: "c-c-c\nb\nc", wantOut: "edited f.txt: replaced 4 occurrences, the first at line 1"},
		{name: "replace_all with one occurrence", file: "only once", args: `{"path":"f.txt","old_text":"once","new_text":"twice","replace_all":true}`, want: "only twice"},
		{name: "not unique", file: "dup dup dup", args: `{"path":"f.txt","old_text":"dup","new_text":"x"}`,
			wantErr: `old_text occurs 3 times in "f.txt"; it must occur exactly once`},
		{name: "missing", file: "abc", args: `{"path":"f.txt","old_text":"xyz","new_text":"q"}`, wantErr: `old_text was not found in "f.txt"`},
		{name: "missing for CRLF", file: "one\r\ntwo\r\n", args: `{"path":"f.txt","old_text":"one\ntwo","new_text":"q"}`, wantErr: "CRLF"},
		{name: "missing for whitespace", file: "abc def", args: `{"path":"f.txt","old_text":"abc  ","new_text":"q"}`, wantErr: "without the whitespace"},
		{name: "same text", file: "abc", args: `{"path":"f.txt","old_text":"b","new_text":"b"}`, wantErr: "would change nothing"},
		{name: "empty old_text", file: "abc", args: `{"path":"f.txt","old_text":"","new_text":"x"}`, wantErr: "old_text is empty"},
		{name: "no old_text", file: "abc", args: `{"path":"f.txt","new_text":"x"}`, wantErr: "old_text is required"},
		{name: "no new_text", file: "abc", args: `{"path":"f.txt","old_text":"a"}`, wantErr: "new_text is required"},
		{name: "no path", file: "abc", args: `{"old_text":"a","new_text":"b"}`, wantErr: "path is required"},
		{name: "replace_all of the wrong type", file: "abc", args: `{"path":"f.txt","old_text":"a","new_text":"b","replace_all":"yes"}`, wantErr: "invalid arguments: "},
		{name: "file missing", args: `{"path":"nope.txt","old_text":"a","new_text":"b"}`, wantErr: `cannot edit "nope.txt": it does not exist`},
		{name: "a directory", file: "abc", args: `{"path":"dir","old_text":"a","new_text":"b"}`, wantErr: "it is a directory"},
		{name: "the workspace", file: "abc", args: `{"path":".","old_text":"a","new_text":"b"}`, wantErr: "workspace directory"},
		{name: "dot-dot", file: "abc", args: `{"path":"../f.txt","old_text":"a","new_text":"b"}`, wantErr: "outside the workspace"},
		{name: "absolute outside", file: "abc", args: `{"path":"/etc/hostname","old_text":"a","new_text":"b"}`, wantErr: "outside the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			full := filepath.Join(ws, "f.txt")
			if tt.file != "" {
				writeFiles(t, ws, map[string]string{"f.txt": tt.file, "dir/x": ""})
			}
			r := run(t, EditFile{}, ws, tt.args)
			if tt.wantErr != "" {
				mustFail(t, r, tt.wantErr)
				if r.Diff != nil {
					t.Errorf("a failed edit carries a diff: %+v", r.Diff)
				}
				if tt.file != "" {
					if got, _ := os.ReadFile(full); string(got) != tt.file {
						t.Errorf("a failed edit changed the file to %q", got)
					}
				}
				return
			}
			mustOK(t, r)
			if tt.wantOut != "" && r.Output != tt.wantOut {
				t.Errorf("output %q, want %q", r.Output, tt.wantOut)
			}
			if got, err := os.ReadFile(full); err != nil || string(got) != tt.want {
				t.Fatalf("file has %q, %v; want %q", got, err, tt.want)
			}
			d := r.Diff
			if d == nil || d.Path != full || d.OldText == nil || *d.OldText != tt.file || d.NewText != tt.want {
				t.Fatalf("diff %+v, want %s from %q to %q", d, full, tt.file, tt.want)
			}
		})
	}
}

func TestEditFileKeepsTheModeAndLeavesNoTemporaryFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits on Windows")
	}
	ws := t.TempDir()
	full := filepath.Join(ws, "run.sh")
	if err := os.WriteFile(full, []byte("#!/bin/sh\necho old\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(full, 0o750); err != nil {
		t.Fatal(err)
	}
	mustOK(t, run(t, EditFile{}, ws, `{"path":"run.sh","old_text":"old","new_text":"new"}`))
	fi, err := os.Stat(full)
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("mode after the edit %v, %v; want 0750", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(ws)
	if len(entries) != 1 {
		t.Fatalf("the workspace holds %d entries, want only run.sh", len(entries))
	}
}

func TestEditFileRefusesLinksOut(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "secret"})
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link.txt"))
	symlink(t, outside, filepath.Join(ws, "dirlink"))
	for _, p := range []string{"link.txt", "dirlink/secret.txt"} {
		mustFail(t, run(t, EditFile{}, ws, `{"path":"`+p+`","old_text":"secret","new_text":"pwned"}`), "symbolic link")
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(got) != "secret" {
		t.Fatalf("the file outside now holds %q", got)
	}
}

func TestWriteFileDiff(t *testing.T) {
	ws := t.TempDir()
	big := strings.Repeat("b", MaxDiffBytes+1)
	writeFiles(t, ws, map[string]string{"old.txt": "before", "big.txt": big, "bin.dat": "a\xffb"})
	tests := []struct {
		name     string
		args     string
		path     string
		old      *string
		new      string
		wantNone bool
	}{
		{name: "new file has no oldText", args: `{"path":"sub/new.txt","content":"fresh"}`, path: "sub/new.txt", new: "fresh"},
		{name: "replaced file", args: `{"path":"old.txt","content":"after"}`, path: "old.txt", old: ptr("before"), new: "after"},
		{name: "old side past the cap", args: `{"path":"big.txt","content":"small"}`, wantNone: true},
		{name: "new side past the cap", args: `{"path":"n.txt","content":"` + big + `"}`, wantNone: true},
		{name: "old side not UTF-8", args: `{"path":"bin.dat","content":"text"}`, wantNone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustOK(t, run(t, WriteFile{}, ws, tt.args))
			if tt.wantNone {
				if r.Diff != nil {
					t.Fatalf("diff %v, want none", r.Diff.Path)
				}
				return
			}
			d := r.Diff
			if d == nil {
				t.Fatal("no diff")
			}
			if want := filepath.Join(ws, filepath.FromSlash(tt.path)); d.Path != want || !filepath.IsAbs(d.Path) {
				t.Errorf("diff path %q, want %q", d.Path, want)
			}
			if (d.OldText == nil) != (tt.old == nil) || d.OldText != nil && *d.OldText != *tt.old || d.NewText != tt.new {
				t.Errorf("diff old %v new %q, want %v %q", d.OldText, d.NewText, tt.old, tt.new)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
