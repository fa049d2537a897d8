package upload

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Dir is the directory of a workspace that uploads land in.
const Dir = "uploads"

// File is the file entry (docs/protocol.md, "Files"): the result of
// file/upload/commit, one element of file/attach's files, and what session/prompt
// attachments refer to.
type File struct {
	RefID         string `json:"ref_id"`
	Marker        string `json:"marker"`
	WorkspacePath string `json:"workspace_path"`
	SizeBytes     int64  `json:"size_bytes"`
	Deduplicated  bool   `json:"deduplicated"`
}

// Entry is the file entry of bytes hashing to sum (hex) stored at rel.
func Entry(sum, filename, rel string, size int64, dedup bool) File {
	return File{RefID: "sha256:" + sum, Marker: Marker(filename, rel), WorkspacePath: rel, SizeBytes: size, Deduplicated: dedup}
}

// Path is where new bytes hashing to sum (hex) are stored: uploads/<sum>[.<ext>],
// the extension taken from filename.
func Path(sum, filename string) string {
	rel := Dir + "/" + sum
	if ext := extension(filename); ext != "" {
		rel += "." + ext
	}
	return rel
}

var imageExts = map[string]bool{"png": true, "jpg": true, "jpeg": true, "gif": true, "webp": true, "bmp": true}

// Marker is the text an attachment adds to a prompt (docs/protocol.md, "Files"):
// [IMAGE:<path>] for an image by its stored extension, else [Document: <filename>]
// <path>.
func Marker(filename, workspacePath string) string {
	if imageExts[strings.TrimPrefix(path.Ext(workspacePath), ".")] {
		return "[IMAGE:" + workspacePath + "]"
	}
	if filename == "" {
		filename = "upload"
	}
	return "[Document: " + filename + "] " + workspacePath
}

// extension is the stored extension of filename: what follows its last dot when
// that is 1 to 16 ASCII letters and digits, lowercased; else "".
func extension(filename string) string {
	i := strings.LastIndexByte(filename, '.')
	if i < 0 {
		return ""
	}
	ext := filename[i+1:]
	if len(ext) < 1 || len(ext) > 16 {
		return ""
	}
	for _, c := range []byte(ext) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return ""
		}
	}
	return strings.ToLower(ext)
}

// uploadsDir is a workspace's uploads directory, opened: everything below goes
// through root, which never resolves a name outside it.
type uploadsDir struct {
	root *os.Root
	info fs.FileInfo // what it was when opened
}

// openUploads opens the workspace's uploads directory, refusing one that is a
// symbolic link or not a directory. With create, a missing one is made 0700; without,
// a missing one is fs.ErrNotExist.
func openUploads(workspace string, create bool) (uploadsDir, error) {
	ws, err := os.OpenRoot(workspace)
	if err != nil {
		return uploadsDir{}, storageFailed("the workspace could not be opened", err)
	}
	defer ws.Close()
	fi, err := ws.Lstat(Dir)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return uploadsDir{}, err
		}
		if err := ws.Mkdir(Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return uploadsDir{}, storageFailed("the uploads directory could not be created", err)
		}
		fi, err = ws.Lstat(Dir)
	}
	if err != nil {
		return uploadsDir{}, storageFailed("the uploads directory could not be inspected", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return uploadsDir{}, storageFailed("the workspace's uploads is a symbolic link or not a directory", nil)
	}
	up, err := ws.OpenRoot(Dir)
	if err != nil {
		return uploadsDir{}, storageFailed("the uploads directory could not be opened", err)
	}
	// Swapped for a link between the Lstat and the open: not the directory we saw.
	if now, err := up.Stat("."); err != nil || !os.SameFile(fi, now) {
		up.Close()
		return uploadsDir{}, storageFailed("the workspace's uploads changed while it was opened", err)
	}
	return uploadsDir{root: up, info: fi}, nil
}

// nameIn is the name within uploads/ of a workspace path, refusing any other path.
func nameIn(rel string) (string, error) {
	name, ok := strings.CutPrefix(rel, Dir+"/")
	if !ok || name == "" || strings.ContainsAny(name, `/\`) {
		return "", storageFailed("the indexed path is not in the uploads directory", fmt.Errorf("path %q", rel))
	}
	return name, nil
}

// tempPrefix and tempSuffix frame the name of a file being written; RemoveTemps
// removes what an interrupted write left of them.
const tempPrefix, tempSuffix = ".zeroclaw-upload-", ".tmp"

// Prepared is an upload's bytes written and synced to a temporary file in a
// workspace's uploads directory, under no name yet. It is the slow part of a
// commit, and needs no lock: nothing names the file until Place.
type Prepared struct {
	workspace string
	dir       uploadsDir
	tmp       string // "" once placed or discarded
}

// createTemp creates a new temporary file of a commit in dir, named so that the
// start-up sweep recognises it.
func createTemp(dir uploadsDir) (*os.File, string, error) {
	var rnd [16]byte
	rand.Read(rnd[:])
	tmp := tempPrefix + hex.EncodeToString(rnd[:]) + tempSuffix
	f, err := dir.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	return f, tmp, err
}

// Prepare writes data to a new temporary file in the workspace's uploads directory
// (creating it 0700) and syncs it.
func Prepare(workspace string, data []byte) (*Prepared, error) {
	dir, err := openUploads(workspace, true)
	if err != nil {
		return nil, err
	}
	f, tmp, err := createTemp(dir)
	if err != nil {
		dir.root.Close()
		return nil, storageFailed("the file could not be created", err)
	}
	err = writeAll(f, data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		dropCached(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dir.root.Remove(tmp)
		dir.root.Close()
		return nil, storageFailed("the file could not be written", err)
	}
	return &Prepared{workspace: workspace, dir: dir, tmp: tmp}, nil
}

// writeAll writes data in pieces of ChunkBytes: on Linux one write of 10 MiB into
// the page cache was measured 10 times slower than ten of 1 MiB (27 ms against
// 3 ms).
func writeAll(f *os.File, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), ChunkBytes)
		if _, err := f.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// Place names the prepared file rel (uploads/<name>), replacing what is there (a
// link is replaced, never followed), and syncs the directory so the rename is
// durable. It fails when the workspace's uploads is no longer the directory the
// file was written in; the caller discards p either way.
func (p *Prepared) Place(rel string) error {
	name, err := nameIn(rel)
	if err != nil {
		return err
	}
	now, err := openUploads(p.workspace, false)
	if err != nil {
		return storageFailed("the workspace's uploads changed while the file was written", err)
	}
	same := os.SameFile(now.info, p.dir.info)
	now.root.Close()
	if !same {
		return storageFailed("the workspace's uploads changed while the file was written", nil)
	}
	if err := p.dir.root.Rename(p.tmp, name); err != nil {
		return storageFailed("the file could not be written", err)
	}
	p.tmp = ""
	syncDir(p.dir.root)
	return nil
}

// Discard removes the temporary file unless it was placed, and closes the directory.
func (p *Prepared) Discard() {
	if p.tmp != "" {
		p.dir.root.Remove(p.tmp)
		p.tmp = ""
	}
	p.dir.root.Close()
}

// syncDir makes a rename durable; where a directory cannot be synced (Windows) the
// rename is as durable as the platform makes it.
func syncDir(up *os.Root) {
	if d, err := up.Open("."); err == nil {
		d.Sync()
		d.Close()
	}
}

// Intact reports whether rel in the workspace is a regular file holding exactly
// size bytes that hash to sum. A link, a directory, an edited or a missing file is
// not intact.
func Intact(workspace, rel string, size int64, sum [sha256.Size]byte) bool {
	name, err := nameIn(rel)
	if err != nil {
		return false
	}
	dir, err := openUploads(workspace, false)
	if err != nil {
		return false
	}
	defer dir.root.Close()
	fi, err := dir.root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	f, err := dir.root.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	// The name could have been swapped for a link between the Lstat and the open.
	if now, err := f.Stat(); err != nil || !os.SameFile(fi, now) {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	var got [sha256.Size]byte
	return [sha256.Size]byte(h.Sum(got[:0])) == sum
}
