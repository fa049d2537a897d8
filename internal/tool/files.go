package tool

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Caps of the file tools. Each keeps the tool's memory and its answer to the model
// bounded whatever the workspace holds.
const (
	MaxReadBytes   = 1 << 20  // read_file shows at most the first 1 MiB of a file
	MaxWriteBytes  = 10 << 20 // write_file refuses content over 10 MiB
	MaxListEntries = 1000     // list_dir shows at most the first 1000 names, sorted
)

// Every file tool goes through openWorkspace: the path is resolved and checked first
// (Resolve, for a clear error naming the problem), and then used only through an
// os.Root opened on the symlink-evaluated workspace. Between the check and the use a
// concurrent process may change the tree (time of check to time of use); os.Root
// resolves every component relative to the workspace's directory handle and refuses
// any that leads out of it (on Linux with openat and O_NOFOLLOW, component by
// component), so a race can make a call fail, never reach outside the workspace.

// openWorkspace resolves p and opens the workspace root; rel is p's resolved path
// relative to it. The caller closes the root.
func openWorkspace(workspace, p string) (r *os.Root, rel string, err error) {
	root, rel, err := resolve(workspace, p)
	if err != nil {
		return nil, "", err
	}
	r, err = os.OpenRoot(root)
	if err != nil {
		return nil, "", fmt.Errorf("cannot open the workspace: %s", errText(err))
	}
	return r, rel, nil
}

// WriteFile is the write_file tool: create or replace one file in the workspace.
type WriteFile struct{}

func (WriteFile) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameWriteFile,
		Description: "Create or replace a file in the workspace with the given content. " +
			"Missing parent directories are created. Paths are relative to the workspace; " +
			"paths outside it are refused. Content is limited to 10 MiB.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the file, relative to the workspace."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"]
}`),
	}
}

func (WriteFile) Mutates() bool { return true }

func (WriteFile) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	switch {
	case a.Path == "":
		return failure("invalid arguments: path is required")
	case a.Content == nil:
		return failure("invalid arguments: content is required")
	case len(*a.Content) > MaxWriteBytes:
		return failure("content is %d bytes; write_file accepts at most %d", len(*a.Content), MaxWriteBytes)
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	r, rel, err := openWorkspace(env.Workspace, a.Path)
	if err != nil {
		return failure("%v", err)
	}
	defer r.Close()
	if rel == "." {
		return failure("cannot write %q: it is the workspace directory", a.Path)
	}
	old, diffable := previous(r, rel, len(*a.Content))
	if err := writeAtomic(r, rel, []byte(*a.Content), 0o644); err != nil {
		return failure("cannot write %q: %s", a.Path, err)
	}
	res := Result{Output: fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), a.Path)}
	if diffable {
		res.Diff = newDiff(absPath(env.Workspace, rel), old, *a.Content)
	}
	return res
}

// previous is what rel holds before a write of n bytes, for the diff: nil when it
// does not exist. diffable is false when either side would be past MaxDiffBytes, or
// what is there is no regular file that can be read.
func previous(r *os.Root, rel string, n int) (old *string, diffable bool) {
	if n > MaxDiffBytes {
		return nil, false
	}
	fi, err := r.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true
	case err != nil, !fi.Mode().IsRegular(), fi.Size() > MaxDiffBytes:
		return nil, false
	}
	f, err := r.Open(rel)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDiffBytes+1))
	if err != nil || len(data) > MaxDiffBytes {
		return nil, false
	}
	s := string(data)
	return &s, true
}

// writeAtomic writes data to rel (with mode perm) inside r through a temporary file in the same
// directory and a rename, so that a reader (or a crash) sees the old content or the
// new, never a part. The temporary file is created with O_EXCL, which never follows a
// symbolic link; the rename replaces whatever is at rel, a link included, rather than
// writing through it. rel has been resolved already, so a link at the target that
// points inside the workspace was followed and its target is what gets replaced.
func writeAtomic(r *os.Root, rel string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Dir(rel), filepath.Base(rel)
	if dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return errors.New("cannot create its directory: " + errText(err))
		}
	}
	if fi, err := r.Lstat(rel); err == nil && fi.IsDir() {
		return errors.New("it is a directory")
	}
	var nonce [6]byte
	rand.Read(nonce[:])
	tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(nonce[:]))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return errors.New(errText(err))
	}
	err = writeAndClose(f, data, perm)
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		r.Remove(tmp)
		return errors.New(errText(err))
	}
	return nil
}

// writeAndClose writes data, sets mode perm whatever the umask, syncs and closes f.
func writeAndClose(f *os.File, data []byte, perm fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ListDir is the list_dir tool: the names in one directory of the workspace.
type ListDir struct{}

func (ListDir) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameListDir,
		Description: "List a directory in the workspace: one name per line, sorted, " +
			"directories with a trailing \"/\". Paths are relative to the workspace " +
			"(default: the workspace itself); paths outside it are refused.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the directory, relative to the workspace. Defaults to \".\"."}
  }
}`),
	}
}

func (ListDir) Mutates() bool { return false }

func (ListDir) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Path string `json:"path"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	if a.Path == "" {
		a.Path = "."
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	r, rel, err := openWorkspace(env.Workspace, a.Path)
	if err != nil {
		return failure("%v", err)
	}
	defer r.Close()
	f, err := r.Open(rel)
	if err != nil {
		return failure("cannot list %q: %s", a.Path, errText(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return failure("cannot list %q: %s", a.Path, errText(err))
	} else if !fi.IsDir() {
		return failure("cannot list %q: not a directory", a.Path)
	}
	names, more, err := firstNames(ctx, f, MaxListEntries)
	if err != nil {
		return failure("cannot list %q: %s", a.Path, errText(err))
	}
	if len(names) == 0 {
		return Result{Output: "(empty directory)"}
	}
	var b strings.Builder
	for _, n := range names {
		s, _ := validText([]byte(n), false)
		b.WriteString(s)
		b.WriteByte('\n')
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if more > 0 {
		out = withNote(out, fmt.Sprintf("[truncated: %d more entries not shown]", more))
	}
	return Result{Output: out, Truncated: more > 0}
}

// firstNames reads the directory in batches and returns its first n names in sorted
// order ("/" appended to directories) and how many more there are, holding at most
// about 2n names at any time however large the directory is.
func firstNames(ctx context.Context, f *os.File, n int) (names []string, more int, err error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		batch, err := f.ReadDir(256)
		for _, e := range batch {
			name := e.Name()
			if e.IsDir() {
				name += "/"
			}
			names = append(names, name)
		}
		total += len(batch)
		if len(names) > 2*n {
			names = smallest(names, n)
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	names = smallest(names, n)
	return names, total - len(names), nil
}

// smallest sorts names by name (ignoring the "/" of directories) and keeps the first n.
func smallest(names []string, n int) []string {
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Compare(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
	})
	if len(names) > n {
		clear(names[n:])
		names = names[:n]
	}
	return names
}
