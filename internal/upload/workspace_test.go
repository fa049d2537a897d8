package upload

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Prepare writes under no name; Place names it; Discard removes what was not placed.
func TestPreparedFilesAreNamedOnlyByPlace(t *testing.T) {
	ws := t.TempDir()
	data := []byte("the bytes")
	p, err := Prepare(ws, data)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(ws, Dir)
	if got := names(t, dir); len(got) != 1 || !tempName.MatchString(got[0]) {
		t.Fatalf("after Prepare uploads/ holds %q, want one temporary file", got)
	}
	sum := sha256.Sum256(data)
	rel := Path(hex.EncodeToString(sum[:]), "a.TXT")
	if err := p.Place(rel); err != nil {
		t.Fatal(err)
	}
	p.Discard()
	if got := names(t, dir); !slices.Equal(got, []string{filepath.Base(rel)}) {
		t.Fatalf("after Place uploads/ holds %q, want %s", got, rel)
	}
	if !Intact(ws, rel, int64(len(data)), sum) || Intact(ws, rel, int64(len(data)), [32]byte{}) {
		t.Error("Intact does not tell the placed bytes from others")
	}

	q, err := Prepare(ws, data)
	if err != nil {
		t.Fatal(err)
	}
	q.Discard()
	if got := names(t, dir); len(got) != 1 {
		t.Fatalf("after Discard uploads/ holds %q", got)
	}
}

// A workspace whose uploads was swapped (for a link to elsewhere) while the file was
// written gets nothing named, neither there nor in the link's target.
func TestPlaceRefusesAnUploadsDirectorySwappedMeanwhile(t *testing.T) {
	ws, elsewhere := t.TempDir(), t.TempDir()
	p, err := Prepare(ws, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Discard()
	if err := os.Rename(filepath.Join(ws, Dir), filepath.Join(ws, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(ws, Dir)); err != nil {
		t.Fatal(err)
	}
	if err := p.Place(Dir + "/name"); err == nil {
		t.Fatal("Place named the file in a directory that is no longer the workspace's uploads")
	}
	if got := names(t, elsewhere); len(got) != 0 {
		t.Errorf("the link's target got %q", got)
	}
	if got := names(t, filepath.Join(ws, "moved")); len(got) != 1 || !tempName.MatchString(got[0]) {
		t.Errorf("the moved directory holds %q, want only the temporary file", got)
	}
}

// At start, what interrupted commits left is removed, and nothing else: not a
// stored upload, not a directory or a link that looks like a temporary file, not
// anything behind an uploads that is a link.
func TestRemoveTempsRemovesOnlyLeftoverTemporaryFiles(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, Dir)
	os.Mkdir(dir, 0o700)
	sum := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	leftovers := []string{
		".zeroclaw-upload-0123456789abcdef0123456789abcdef.tmp", // this version
		"." + sum + ".pdf.0123456789abcdef.tmp",                 // earlier versions
		"." + sum + ".0123456789abcdef.tmp",
	}
	kept := []string{sum + ".pdf", sum, ".hidden.tmp", "notes.tmp"}
	for _, n := range append(slices.Clone(leftovers), kept...) {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600)
	}
	dirLike := ".zeroclaw-upload-ffffffffffffffffffffffffffffffff.tmp"
	os.Mkdir(filepath.Join(dir, dirLike), 0o700)
	kept = append(kept, dirLike)
	n, err := RemoveTemps(ws)
	if err != nil || n != len(leftovers) {
		t.Fatalf("RemoveTemps = %d, %v; want %d", n, err, len(leftovers))
	}
	got := names(t, dir)
	slices.Sort(got)
	slices.Sort(kept)
	if !slices.Equal(got, kept) {
		t.Errorf("uploads/ holds %q, want %q", got, kept)
	}

	// A workspace without uploads/, or none at all: nothing to do.
	if n, err := RemoveTemps(t.TempDir()); n != 0 || err != nil {
		t.Errorf("no uploads/: %d, %v", n, err)
	}
	if n, err := RemoveTemps(filepath.Join(ws, "missing")); n != 0 || err != nil {
		t.Errorf("no workspace: %d, %v", n, err)
	}
	// uploads/ a link: not looked into.
	other, target := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(target, leftovers[0]), []byte("x"), 0o600)
	os.Symlink(target, filepath.Join(other, Dir))
	if n, err := RemoveTemps(other); n != 0 || err == nil {
		t.Errorf("uploads/ a link: %d, %v; want an error and nothing removed", n, err)
	}
	if got := names(t, target); len(got) != 1 {
		t.Errorf("the link's target lost its file: %q", got)
	}
}
