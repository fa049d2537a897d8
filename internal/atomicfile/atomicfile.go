// Package atomicfile replaces a file's contents so that a crash at any instant leaves
// either the old file or the new one, never a mix: write a temporary file in the same
// directory, fsync it, rename it over the target, fsync the directory.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TempSuffix names the temporary file beside the target: path + TempSuffix. The name
// is fixed rather than random so that a crash leaves at most one stray file per
// target, which RemoveTemp finds without guessing and the next write would reuse.
// Writers of one path must therefore be serialized by the caller.
const TempSuffix = ".tmp"

// Write replaces path with data, mode perm. The temporary file is opened without
// following links, so a link planted at its name cannot redirect the write. On any
// error before the rename, path is untouched. An error syncing the directory after
// the rename is returned too, but the new contents are then already in place.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp := path + TempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|oNoFollow, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	// A stray temporary file from an earlier crash keeps its old mode through
	// O_CREATE; set ours explicitly.
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("writing %s: syncing its directory: %w", filepath.Base(path), err)
	}
	return nil
}

// RemoveTemp removes the temporary file an interrupted Write of path left behind
// (docs/protocol.md, "Storage failures": removed at the next start). It does not
// follow a link at that name and removes nothing else; a missing file is not an
// error. Call it only while no Write of path can be running (at start, holding the
// daemon's lock).
func RemoveTemp(path string) (removed bool, err error) {
	tmp := path + TempSuffix
	fi, err := os.Lstat(tmp)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing the temporary file of %s: %w", filepath.Base(path), err)
	}
	if fi.IsDir() { // never ours: Write opens a file there
		return false, fmt.Errorf("removing the temporary file of %s: %s is a directory", filepath.Base(path), filepath.Base(tmp))
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("removing the temporary file of %s: %w", filepath.Base(path), err)
	}
	return true, nil
}
