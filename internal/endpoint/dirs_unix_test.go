//go:build unix

package endpoint

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// withUmask runs the rest of the test under umask m; the umask is process-wide,
// so tests that use it must not run in parallel.
func withUmask(t *testing.T, m int) {
	t.Helper()
	old := unix.Umask(m)
	t.Cleanup(func() { unix.Umask(old) })
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestEnsureCreatesPrivateDirs(t *testing.T) {
	withUmask(t, 0o022)
	root := t.TempDir()
	d := Dirs{ConfigDir: filepath.Join(root, "a", "cfg"), DataDir: filepath.Join(root, "b", "data")}
	if err := d.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.ConfigDir, d.DataDir, filepath.Dir(d.ConfigDir), filepath.Dir(d.DataDir)} {
		if got := perm(t, p); got != 0o700 {
			t.Errorf("%s: mode %v, want 0700", p, got)
		}
	}
}

func TestEnsureTightensOwnDataDirAndLeavesConfigDir(t *testing.T) {
	root := t.TempDir()
	d := Dirs{ConfigDir: filepath.Join(root, "cfg"), DataDir: filepath.Join(root, "data")}
	for _, p := range []string{d.ConfigDir, d.DataDir} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Ensure(); err != nil {
		t.Fatal(err)
	}
	if got := perm(t, d.DataDir); got != 0o700 {
		t.Errorf("data dir mode %v, want 0700", got)
	}
	if got := perm(t, d.ConfigDir); got != 0o755 {
		t.Errorf("config dir mode %v, want 0755 (left alone)", got)
	}
}

func TestEnsureRefusesDataDirOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	root := t.TempDir()
	d := Dirs{ConfigDir: filepath.Join(root, "cfg"), DataDir: filepath.Join(root, "data")}
	if err := os.Mkdir(d.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d.DataDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := d.Ensure()
	if err == nil || !strings.Contains(err.Error(), d.DataDir) {
		t.Fatalf("Ensure = %v, want an error naming %s", err, d.DataDir)
	}
}
