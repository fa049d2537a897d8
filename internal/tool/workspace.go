package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrOutsideWorkspace is wrapped by every error Resolve returns for a path that does
// not lie inside the workspace, lexically or through a symbolic link.
var ErrOutsideWorkspace = errors.New("outside the workspace")

// outsideError names the path the caller gave, so that the model sees its own words.
type outsideError struct {
	path    string
	viaLink bool
}

func (e *outsideError) Error() string {
	if e.viaLink {
		return fmt.Sprintf("path %q leaves the workspace through a symbolic link", e.path)
	}
	return fmt.Sprintf("path %q is outside the workspace", e.path)
}

func (e *outsideError) Is(target error) bool { return target == ErrOutsideWorkspace }

// maxLinks bounds how many symbolic links one resolution follows, as the kernel does
// (ELOOP), so that a loop of links ends in an error rather than forever.
const maxLinks = 255

// Resolve returns the absolute, symlink-free path that p names inside workspace, or
// an error wrapping ErrOutsideWorkspace when p is not inside it.
//
// A relative p is relative to the workspace; an absolute p must lie inside it (given
// either as the workspace's path or as its symlink-evaluated path). A ".." that climbs
// out of the workspace is refused. Every existing component is resolved with its
// symbolic links followed, and the result must still lie inside the symlink-evaluated
// workspace; components that do not exist yet (a file about to be written) are kept
// as they are. A symbolic link in the last component is followed too, also when it
// dangles, so that writing to a link that points outside is refused.
//
// Resolve only checks. Between the check and the use a concurrent process could swap
// a directory for a link (time of check to time of use); the file tools therefore
// also perform every access through an os.Root opened on the workspace, which refuses
// to leave it whatever the file system looks like at the instant of use.
func Resolve(workspace, p string) (string, error) {
	root, rel, err := resolve(workspace, p)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, rel), nil
}

// resolve is Resolve, returning the symlink-evaluated workspace and the resolved path
// relative to it ("." for the workspace itself), which is what an os.Root wants.
func resolve(workspace, p string) (root, rel string, err error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return "", "", fmt.Errorf("workspace %q: %w", workspace, err)
	}
	root, err = filepath.EvalSymlinks(ws)
	if err != nil {
		return "", "", fmt.Errorf("workspace %q: %w", workspace, err)
	}

	// Lexical step: where does p point before any link is followed?
	var lexical string
	if filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		var ok bool
		if lexical, ok = within(ws, clean); !ok {
			if lexical, ok = within(root, clean); !ok {
				return "", "", &outsideError{path: p}
			}
		}
	} else {
		var ok bool
		if lexical, ok = within(ws, filepath.Join(ws, p)); !ok || climbsOut(p) {
			return "", "", &outsideError{path: p}
		}
	}

	// Physical step: walk the (clean, ".."-free) components from the evaluated root,
	// following every link to its end and checking that it ends inside.
	cur := root
	comps := strings.Split(lexical, string(filepath.Separator))
	for i, c := range comps {
		if c == "." || c == "" {
			continue
		}
		next := filepath.Join(cur, c)
		target, isLink, err := readLink(next)
		switch {
		case missing(err):
			// Nothing below a missing component exists either, and the lexical path
			// has no ".." left: the rest stays as written.
			cur = filepath.Join(next, filepath.Join(comps[i+1:]...))
			return root, mustWithin(root, cur), nil
		case err != nil:
			return "", "", fmt.Errorf("path %q: %w", p, err)
		case !isLink:
			cur = next
			continue
		}
		end, err := evalLenient(cur, target)
		if err != nil {
			return "", "", fmt.Errorf("path %q: %w", p, err)
		}
		if _, ok := within(root, end); !ok {
			return "", "", &outsideError{path: p, viaLink: true}
		}
		cur = end
	}
	return root, mustWithin(root, cur), nil
}

// climbsOut reports whether the relative path p has more ".." than names at some
// point, such as "a/../../ws/f": even when it comes back in the end, it names a
// place outside on the way, and such a path is more likely a probe than a mistake.
func climbsOut(p string) bool {
	depth := 0
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		switch c {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// mustWithin is within for a path that the walk has already kept inside root.
func mustWithin(root, p string) string {
	rel, _ := within(root, p)
	return rel
}

// within reports whether the clean absolute path p lies inside (or is) dir, and
// returns it relative to dir. filepath.Rel compares case-insensitively on Windows.
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || filepath.IsAbs(rel) || rel == ".." ||
		strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// readLink reports whether name is a symbolic link (on Windows also a junction,
// which Lstat reports as irregular) and where it points.
func readLink(name string) (target string, isLink bool, err error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return "", false, err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
		return "", false, nil
	}
	target, err = os.Readlink(name)
	if err != nil {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return "", false, nil // an irregular file that is no link
		}
		return "", false, err
	}
	return target, true, nil
}

// missing reports whether err says a path does not exist, counting "a component is
// not a directory": the later open fails with the precise reason.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// evalLenient resolves the link target found in directory dir to an absolute path,
// following every further link like filepath.EvalSymlinks does, except that a
// missing component does not fail: it and the rest are taken as written (so a
// dangling link still tells where a write through it would land).
func evalLenient(dir, target string) (string, error) {
	cur, rest := dir, filepath.FromSlash(target)
	if filepath.IsAbs(rest) {
		vol := filepath.VolumeName(rest)
		cur, rest = vol+string(filepath.Separator), rest[len(vol):]
	}
	links := 1
	for rest != "" {
		var c string
		c, rest, _ = strings.Cut(rest, string(filepath.Separator))
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		t, isLink, err := readLink(next)
		switch {
		case missing(err):
			cur = next // the rest is lexical from here on: later Lstats fail too
			continue
		case err != nil:
			return "", err
		case !isLink:
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("too many levels of symbolic links")
		}
		if t = filepath.FromSlash(t); filepath.IsAbs(t) {
			vol := filepath.VolumeName(t)
			cur, t = vol+string(filepath.Separator), t[len(vol):]
		}
		rest = t + string(filepath.Separator) + rest
	}
	return cur, nil
}
