package atomicfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWriteReplacesTheFileWithMode0600(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := os.Stat(path + TempSuffix); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
}

func TestStrayTempFileIsReusedWithOurMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path+TempSuffix, []byte("crash leftovers, longer than new"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("read %q", b)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// A directory where the temporary file must go fails the write even for root, and
// leaves the target as it was.
func TestFailureLeavesTheTargetUntouched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, []byte("old"), 0o600)
	if err := os.Mkdir(path+TempSuffix, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err == nil {
		t.Fatal("write succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("target changed to %q", b)
	}
	if fi, err := os.Stat(path + TempSuffix); err != nil || !fi.IsDir() {
		t.Errorf("the blocking directory was touched: %v", err)
	}
}

func TestLinkAtTheTempNameIsNotFollowed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	if err := os.Symlink(victim, path+TempSuffix); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err == nil {
		t.Fatal("write through a planted link succeeded")
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("victim overwritten: %q", b)
	}
}

func TestRemoveTempRemovesWhatAnInterruptedWriteLeft(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, []byte("kept"), 0o600)
	if removed, err := RemoveTemp(path); err != nil || removed {
		t.Fatalf("RemoveTemp with no temporary file = %v, %v", removed, err)
	}
	os.WriteFile(path+TempSuffix, []byte("half a wri"), 0o600)
	if removed, err := RemoveTemp(path); err != nil || !removed {
		t.Fatalf("RemoveTemp = %v, %v", removed, err)
	}
	if _, err := os.Lstat(path + TempSuffix); !os.IsNotExist(err) {
		t.Errorf("temporary file still there: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "kept" {
		t.Errorf("target changed to %q", b)
	}
}

func TestRemoveTempRemovesALinkNotItsTarget(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	os.Symlink(victim, path+TempSuffix)
	if _, err := RemoveTemp(path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Fatalf("victim %q, %v", b, err)
	}
	os.Mkdir(path+TempSuffix, 0o700)
	if _, err := RemoveTemp(path); err == nil {
		t.Error("a directory at the temporary name was removed without complaint")
	}
}
