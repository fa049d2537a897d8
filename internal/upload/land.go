package upload

import (
	"bytes"
	"context"
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

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Dir is the directory of a workspace that uploads land in.
const Dir = "uploads"

// File is the file entry of SPEC §10: the result of file/upload/commit, one element
// of file/attach's files, and what session/prompt attachments refer to.
type File struct {
	RefID         string `json:"ref_id"`
	Marker        string `json:"marker"`
	WorkspacePath string `json:"workspace_path"`
	SizeBytes     int64  `json:"size_bytes"`
	Deduplicated  bool   `json:"deduplicated"`
}

// Binding is the exact session an upload was begun for: the live session (its
// pointer is its generation), its owner and its agent, as they were at begin.
type Binding struct {
	Session *session.Session
	Owner   string
	Agent   string
}

// Bind returns the binding of s as it is now.
func Bind(s *session.Session) Binding {
	return Binding{Session: s, Owner: s.Owner, Agent: s.Agent.Alias}
}

// Guard is the authorization side of the commit step, supplied by the rpc layer.
type Guard struct {
	// Hold keeps the accepted authorization policy and the set of paired tokens as
	// they are until release: a policy change or an unpairing waits. It is taken
	// before the session lock.
	Hold func(ctx context.Context) (release func(), err error)
	// Check checks the caller's credential, files:create, ownership of s and
	// entitlement to its agent against the policy Hold keeps. It runs under Hold and
	// the session lock; its error is the commit's answer.
	Check func(s *session.Session) error
}

// Payload is what one commit lands: the bytes (in pieces, as they were staged),
// their size and hash, and the name the client gave.
type Payload struct {
	Filename string // "" is "upload"
	Pieces   [][]byte
	Size     int64
	Sum      [sha256.Size]byte
}

// Land is the one commit step of file/attach and file/upload/commit. Under g.Hold
// and the session lock it confirms that b is still the live session of its id with
// the same owner and agent, then runs g.Check, and only then writes and indexes the
// file. A failure of either check returns before anything is written; a policy
// change, an unpairing or a session close that arrives after the check completes
// only after the file is stored.
func (st *Stage) Land(ctx context.Context, b Binding, p Payload, g Guard) (File, error) {
	release, err := g.Hold(ctx)
	if err != nil {
		return File{}, err
	}
	defer release()
	var f File
	err = st.sessions.Locked(b.Session, func() error {
		s := b.Session
		if s.Owner != b.Owner || s.Agent.Alias != b.Agent {
			return sessionGone(s.ID)
		}
		if err := g.Check(s); err != nil {
			return err
		}
		var err error
		f, err = st.save(ctx, s, p)
		return err
	})
	return f, err
}

// save writes p into s's workspace and indexes it; a repeat of indexed bytes is
// checked on disk and written back when the file there is not those bytes.
func (st *Stage) save(ctx context.Context, s *session.Session, p Payload) (File, error) {
	sum := hex.EncodeToString(p.Sum[:])
	filename := p.Filename
	if filename == "" {
		filename = "upload"
	}
	idx, err := st.index.IndexedUpload(ctx, s.ID, sum)
	switch {
	case err == nil:
		rewrote, err := st.ensure(s.Workspace, idx.WorkspacePath, p)
		if err != nil {
			return File{}, err
		}
		if rewrote {
			st.log.Warn("an indexed upload was changed on disk; wrote it back", "session", s.ID, "sha256", sum)
		}
		return entry(sum, filename, idx.WorkspacePath, p.Size, true), nil
	case !errors.Is(err, store.ErrNotFound):
		st.log.Error("reading the upload index", "session", s.ID, "err", err)
		return File{}, storageFailed("the upload index could not be read")
	}
	rel := Dir + "/" + sum
	if ext := extension(p.Filename); ext != "" {
		rel += "." + ext
	}
	if err := st.write(s.Workspace, rel, p); err != nil {
		return File{}, err
	}
	err = st.index.IndexUpload(ctx, store.Upload{SessionID: s.ID, SHA256: sum, Filename: filename, WorkspacePath: rel, Size: p.Size})
	if err != nil {
		st.log.Error("indexing an upload", "session", s.ID, "err", err)
		return File{}, storageFailed("the upload index could not be written")
	}
	return entry(sum, filename, rel, p.Size, false), nil
}

func entry(sum, filename, rel string, size int64, dedup bool) File {
	return File{RefID: "sha256:" + sum, Marker: Marker(filename, rel), WorkspacePath: rel, SizeBytes: size, Deduplicated: dedup}
}

var imageExts = map[string]bool{"png": true, "jpg": true, "jpeg": true, "gif": true, "webp": true, "bmp": true}

// Marker is the text an attachment adds to a prompt (SPEC §10): [IMAGE:<path>] for
// an image by its stored extension, else [Document: <filename>] <path>.
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

// openUploads opens the workspace's uploads directory (creating it 0700), refusing
// one that is a symbolic link or not a directory. Everything below goes through the
// returned root, which never resolves a name outside it.
func (st *Stage) openUploads(workspace string) (*os.Root, error) {
	ws, err := os.OpenRoot(workspace)
	if err != nil {
		st.log.Error("opening a session workspace", "err", err)
		return nil, storageFailed("the workspace could not be opened")
	}
	defer ws.Close()
	fi, err := ws.Lstat(Dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := ws.Mkdir(Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			st.log.Error("creating the uploads directory", "err", err)
			return nil, storageFailed("the uploads directory could not be created")
		}
		fi, err = ws.Lstat(Dir)
	}
	if err != nil {
		st.log.Error("inspecting the uploads directory", "err", err)
		return nil, storageFailed("the uploads directory could not be inspected")
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		st.log.Warn("refusing an upload: the workspace's uploads is a symbolic link or not a directory")
		return nil, storageFailed("the workspace's uploads is a symbolic link or not a directory")
	}
	up, err := ws.OpenRoot(Dir)
	if err != nil {
		st.log.Error("opening the uploads directory", "err", err)
		return nil, storageFailed("the uploads directory could not be opened")
	}
	// Swapped for a link between the Lstat and the open: not the directory we saw.
	if now, err := up.Stat("."); err != nil || !os.SameFile(fi, now) {
		up.Close()
		st.log.Warn("refusing an upload: the workspace's uploads changed while it was opened")
		return nil, storageFailed("the workspace's uploads changed while it was opened")
	}
	return up, nil
}

// write stores p at rel (uploads/<name>): a temporary file in the same directory,
// synced, renamed over the name (which replaces a link there rather than following
// it), then the directory synced.
func (st *Stage) write(workspace, rel string, p Payload) error {
	name, ok := strings.CutPrefix(rel, Dir+"/")
	if !ok || name == "" || strings.ContainsAny(name, `/\`) {
		st.log.Error("an indexed upload path is not in uploads/", "path", rel)
		return storageFailed("the indexed path is not in the uploads directory")
	}
	up, err := st.openUploads(workspace)
	if err != nil {
		return err
	}
	defer up.Close()
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := fmt.Sprintf(".%s.%x.tmp", name, rnd)
	f, err := up.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		st.log.Error("creating an upload's temporary file", "err", err)
		return storageFailed("the file could not be created")
	}
	err = writePieces(f, p.Pieces)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = up.Rename(tmp, name)
	}
	if err != nil {
		up.Remove(tmp)
		st.log.Error("writing an upload", "err", err)
		return storageFailed("the file could not be written")
	}
	syncDir(up)
	return nil
}

func writePieces(w io.Writer, pieces [][]byte) error {
	for _, b := range pieces {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// syncDir makes a rename durable; where a directory cannot be synced (Windows) the
// rename is as durable as the platform makes it.
func syncDir(up *os.Root) {
	if d, err := up.Open("."); err == nil {
		d.Sync()
		d.Close()
	}
}

// ensure makes the file at rel hold p's bytes: it is left alone when it is a
// regular file with exactly those bytes, else (edited, deleted, replaced by a link
// or anything else) written back. It reports whether it wrote.
func (st *Stage) ensure(workspace, rel string, p Payload) (bool, error) {
	if st.intact(workspace, rel, p) {
		return false, nil
	}
	return true, st.write(workspace, rel, p)
}

func (st *Stage) intact(workspace, rel string, p Payload) bool {
	name, ok := strings.CutPrefix(rel, Dir+"/")
	if !ok {
		return false
	}
	up, err := st.openUploads(workspace)
	if err != nil {
		return false
	}
	defer up.Close()
	fi, err := up.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != p.Size {
		return false
	}
	f, err := up.Open(name)
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
	return bytes.Equal(h.Sum(nil), p.Sum[:])
}
