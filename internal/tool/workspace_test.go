package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confinedTree builds, under a temporary directory:
//
//	outside/secret.txt            a file outside the workspace
//	ws/sub/file.txt               the workspace and a file in it
//	ws/out -> ../outside          relative link to a directory outside
//	ws/outabs -> <abs outside>    absolute link to a directory outside
//	ws/outfile -> <abs secret>    link to a file outside
//	ws/dangling -> <abs outside/new.txt>  dangling link pointing outside
//	ws/in -> sub                  relative link inside
//	ws/inabs -> <abs ws/sub>      absolute link inside
//	ws/linkfile -> sub/file.txt   link to a file inside
//	ws/loop -> loop               a link to itself
//	wslink -> ws                  a link to the workspace itself
//
// It returns the workspace, the outside directory and the link to the workspace.
func confinedTree(t *testing.T) (ws, outside, wslink string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(tmp, "ws")
	outside = filepath.Join(tmp, "outside")
	writeFiles(t, tmp, map[string]string{
		"outside/secret.txt": "TOPSECRET",
		"ws/sub/file.txt":    "inside",
	})
	symlink(t, filepath.Join("..", "outside"), filepath.Join(ws, "out"))
	symlink(t, outside, filepath.Join(ws, "outabs"))
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(ws, "outfile"))
	symlink(t, filepath.Join(outside, "new.txt"), filepath.Join(ws, "dangling"))
	symlink(t, "sub", filepath.Join(ws, "in"))
	symlink(t, filepath.Join(ws, "sub"), filepath.Join(ws, "inabs"))
	symlink(t, filepath.Join("sub", "file.txt"), filepath.Join(ws, "linkfile"))
	symlink(t, "loop", filepath.Join(ws, "loop"))
	wslink = filepath.Join(tmp, "wslink")
	symlink(t, ws, wslink)
	return ws, outside, wslink
}

func TestResolve(t *testing.T) {
	ws, outside, wslink := confinedTree(t)
	const outsideErr, linkErr = "is outside the workspace", "leaves the workspace through a symbolic link"
	tests := []struct {
		name      string
		workspace string
		path      string
		want      string // resolved path relative to ws, when no error
		wantErr   string
	}{
		{"empty is the workspace", ws, "", ".", ""},
		{"dot is the workspace", ws, ".", ".", ""},
		{"relative file", ws, "sub/file.txt", "sub/file.txt", ""},
		{"not yet existing", ws, "new/dir/file.txt", "new/dir/file.txt", ""},
		{"dotdot inside", ws, "sub/../sub/file.txt", "sub/file.txt", ""},
		{"dotdot", ws, "..", "", outsideErr},
		{"dotdot then outside", ws, "../outside/secret.txt", "", outsideErr},
		{"dotdot climbing out and back", ws, "sub/../../ws/sub/file.txt", "", outsideErr},
		{"absolute inside", ws, filepath.Join(ws, "sub", "file.txt"), "sub/file.txt", ""},
		{"absolute outside", ws, filepath.Join(outside, "secret.txt"), "", outsideErr},
		{"absolute root", ws, string(filepath.Separator), "", outsideErr},
		{"link to a directory outside", ws, "out/secret.txt", "", linkErr},
		{"link to a directory outside, itself", ws, "out", "", linkErr},
		{"absolute link outside", ws, "outabs/secret.txt", "", linkErr},
		{"link to a file outside", ws, "outfile", "", linkErr},
		{"dangling link pointing outside", ws, "dangling", "", linkErr},
		{"new file under a link outside", ws, "out/new/file.txt", "", linkErr},
		{"link inside", ws, "in/file.txt", "sub/file.txt", ""},
		{"absolute link inside", ws, "inabs/file.txt", "sub/file.txt", ""},
		{"link to a file inside", ws, "linkfile", "sub/file.txt", ""},
		{"link loop", ws, "loop", "", "too many levels of symbolic links"},
		{"workspace given through a link", wslink, "in/file.txt", "sub/file.txt", ""},
		{"absolute path through the workspace link", wslink, filepath.Join(wslink, "sub", "file.txt"), "sub/file.txt", ""},
		{"absolute evaluated path with the workspace link", wslink, filepath.Join(ws, "sub"), "sub", ""},
		{"workspace link, outside", wslink, "../outside", "", outsideErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.workspace, tt.path)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Resolve(%q) = %q, want an error containing %q", tt.path, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) error %q, want it to contain %q", tt.path, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), `"`+tt.path+`"`) {
					t.Errorf("error %q does not name the path %q", err, tt.path)
				}
				if tt.wantErr != "too many levels of symbolic links" && !errors.Is(err, ErrOutsideWorkspace) {
					t.Errorf("error %q does not wrap ErrOutsideWorkspace", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.path, err)
			}
			if want := filepath.Join(ws, filepath.FromSlash(tt.want)); got != want {
				t.Fatalf("Resolve(%q) = %q, want %q", tt.path, got, want)
			}
		})
	}
}

// TestFileToolsRefuseToLeaveTheWorkspace drives the tools themselves through every
// way out, and checks that nothing outside was read, written or listed.
func TestFileToolsRefuseToLeaveTheWorkspace(t *testing.T) {
	ws, outside, _ := confinedTree(t)
	const outsideErr, linkErr = "is outside the workspace", "leaves the workspace through a symbolic link"
	tests := []struct {
		name string
		tool Tool
		args string
		want string
	}{
		{"read dotdot", ReadFile{}, `{"path":"../outside/secret.txt"}`, outsideErr},
		{"read absolute outside", ReadFile{}, `{"path":` + jsonString(t, filepath.Join(outside, "secret.txt")) + `}`, outsideErr},
		{"read through a directory link", ReadFile{}, `{"path":"out/secret.txt"}`, linkErr},
		{"read a file link", ReadFile{}, `{"path":"outfile"}`, linkErr},
		{"write dotdot", WriteFile{}, `{"path":"../outside/new.txt","content":"x"}`, outsideErr},
		{"write absolute outside", WriteFile{}, `{"path":` + jsonString(t, filepath.Join(outside, "new.txt")) + `,"content":"x"}`, outsideErr},
		{"write through a directory link", WriteFile{}, `{"path":"out/new.txt","content":"x"}`, linkErr},
		{"write nested dirs through a directory link", WriteFile{}, `{"path":"outabs/a/b/new.txt","content":"x"}`, linkErr},
		{"write over a file link pointing outside", WriteFile{}, `{"path":"outfile","content":"pwned"}`, linkErr},
		{"write a dangling link pointing outside", WriteFile{}, `{"path":"dangling","content":"pwned"}`, linkErr},
		{"list dotdot", ListDir{}, `{"path":".."}`, outsideErr},
		{"list absolute outside", ListDir{}, `{"path":` + jsonString(t, outside) + `}`, outsideErr},
		{"list a directory link", ListDir{}, `{"path":"out"}`, linkErr},
		{"list an absolute directory link", ListDir{}, `{"path":"outabs"}`, linkErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.tool, ws, tt.args)
			mustFail(t, r, tt.want)
			if strings.Contains(r.Output, "TOPSECRET") || strings.Contains(r.Output, "secret.txt\n") {
				t.Fatalf("output leaks the outside: %q", r.Output)
			}
		})
	}
	// Nothing outside changed.
	got, err := os.ReadFile(filepath.Join(outside, "secret.txt"))
	if err != nil || string(got) != "TOPSECRET" {
		t.Fatalf("outside file changed: %q, %v", got, err)
	}
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 {
		t.Fatalf("outside directory changed: %v, %v", entries, err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "outfile")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link at the write target was replaced: %v, %v", fi, err)
	}
}

func TestFileToolsFollowLinksInside(t *testing.T) {
	ws, _, _ := confinedTree(t)
	if got := mustOK(t, run(t, ReadFile{}, ws, `{"path":"in/file.txt"}`)).Output; got != "inside" {
		t.Fatalf("read through a link inside = %q", got)
	}
	if got := mustOK(t, run(t, ReadFile{}, ws, `{"path":"inabs/file.txt"}`)).Output; got != "inside" {
		t.Fatalf("read through an absolute link inside = %q", got)
	}
	if got := mustOK(t, run(t, ListDir{}, ws, `{"path":"in"}`)).Output; got != "file.txt" {
		t.Fatalf("list through a link inside = %q", got)
	}
	mustOK(t, run(t, WriteFile{}, ws, `{"path":"in/new.txt","content":"via link"}`))
	if got, err := os.ReadFile(filepath.Join(ws, "sub", "new.txt")); err != nil || string(got) != "via link" {
		t.Fatalf("write through a link inside: %q, %v", got, err)
	}
	// Writing to a link to a file inside replaces the target's content and keeps the link.
	mustOK(t, run(t, WriteFile{}, ws, `{"path":"linkfile","content":"updated"}`))
	if got, err := os.ReadFile(filepath.Join(ws, "sub", "file.txt")); err != nil || string(got) != "updated" {
		t.Fatalf("write to a link inside: target has %q, %v", got, err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "linkfile")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link inside was replaced: %v, %v", fi, err)
	}
}

func TestSymlinkedParentDirectoryPointingOut(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tmp, "ws")
	outside := filepath.Join(tmp, "outside")
	writeFiles(t, tmp, map[string]string{"outside/deep/secret.txt": "secret", "ws/a/keep": ""})
	// ws/a/b -> ../../outside/deep: the parent of the file is a link out.
	symlink(t, filepath.Join("..", "..", "outside", "deep"), filepath.Join(ws, "a", "b"))
	for _, tt := range []struct {
		tool Tool
		args string
	}{
		{ReadFile{}, `{"path":"a/b/secret.txt"}`},
		{WriteFile{}, `{"path":"a/b/secret.txt","content":"pwned"}`},
		{WriteFile{}, `{"path":"a/b/c/new.txt","content":"pwned"}`},
		{ListDir{}, `{"path":"a/b"}`},
	} {
		mustFail(t, run(t, tt.tool, ws, tt.args), `path "a/b`)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "deep", "secret.txt")); string(got) != "secret" {
		t.Fatalf("outside file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "deep", "c")); !os.IsNotExist(err) {
		t.Fatalf("a directory was created outside: %v", err)
	}
}

// TestRaceAfterResolveCannotEscape swaps a checked directory for a link pointing out
// between the check and the use: the os.Root under the file tools refuses it.
func TestRaceAfterResolveCannotEscape(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tmp, "ws")
	outside := filepath.Join(tmp, "outside")
	writeFiles(t, tmp, map[string]string{"outside/f.txt": "secret", "ws/d/f.txt": "inside"})

	r, rel, err := openWorkspace(ws, "d/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "d.old")); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(ws, "d"))

	if err := writeAtomic(r, rel, []byte("pwned"), 0o644); err == nil {
		t.Fatal("write through a swapped-in link succeeded")
	}
	if _, err := r.ReadFile(rel); err == nil {
		t.Fatal("read through a swapped-in link succeeded")
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(got) != "secret" {
		t.Fatalf("outside file changed: %q", got)
	}
}
