package upload

import (
	"errors"
	"io/fs"
	"regexp"
)

// tempName matches what a write into uploads/ leaves behind when it is interrupted:
// this version's temporary files, and those of earlier versions, which wrote
// ".<sha256>[.<ext>].<16 hex>.tmp".
var tempName = regexp.MustCompile(`^(\.zeroclaw-upload-[0-9a-f]{32}|\.[0-9a-f]{64}(\.[0-9a-z]{1,16})?\.[0-9a-f]{16})\.tmp$`)

// RemoveTemps removes the temporary files an interrupted commit left in the
// workspace's uploads directory (docs/protocol.md, "Storage failures"), and returns
// how many it removed. It runs at the daemon's start, before any commit: every such
// file is garbage then. A missing uploads directory has none; one that is a link is
// not looked into.
func RemoveTemps(workspace string) (int, error) {
	dir, err := openUploads(workspace, false)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer dir.root.Close()
	d, err := dir.root.Open(".")
	if err != nil {
		return 0, storageFailed("the uploads directory could not be read", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, storageFailed("the uploads directory could not be read", err)
	}
	removed := 0
	var errs []error
	for _, name := range names {
		if !tempName.MatchString(name) {
			continue
		}
		if fi, err := dir.root.Lstat(name); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := dir.root.Remove(name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if len(errs) > 0 {
		return removed, storageFailed("a temporary file could not be removed", errors.Join(errs...))
	}
	return removed, nil
}
