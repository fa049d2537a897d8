package rpc

import (
	"context"
	"encoding/hex"
	"errors"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
)

// binding is what an upload or an attach is bound to (the seed's "Chunked uploads"):
// the exact live session it was begun for. The pointer is the session's live
// generation, and a live session's owner and agent never change, so the same pointer
// is the same session, owner and agent.
type binding struct{ sess *session.Session }

func (b binding) MetadataBytes() int {
	return len(b.sess.ID) + len(b.sess.Owner) + len(b.sess.Agent.Alias)
}

// Workspace is where the upload lands, and where its chunks are written as they
// arrive (the temporary file of step 1 below).
func (b binding) Workspace() string { return b.sess.Workspace }

// commit is the one commit step of file/attach and file/upload/commit, in the
// order the seed demands:
//
//  1. Write and sync the bytes to a temporary file in the session's workspace. This
//     is the slow I/O, and it runs under no lock: nothing names the file yet, and no
//     config write, unpairing or close waits for it. A chunked upload's bytes were
//     written to that file as they arrived, so what is left is the last chunk and
//     the fsync (upload.Payload.Prepare). A repeat of bytes the session stored
//     already, intact on disk, needs no file (and answers on a full disk): the one
//     its chunks were written to is removed.
//  2. Hold the accepted authorization policy (the config write lock) and the set of
//     paired tokens, then take the session lock while b is still the live session
//     of its id (else -32000, like a missing session).
//  3. Check the caller's credential, files:create, ownership of the session and
//     entitlement to its agent against the held policy.
//  4. Name the file and index it (place).
//
// A failed check returns before anything is named, and the temporary file is
// removed; a failed write of step 1 is answered after the checks, as it was when
// the write came after them. A policy change, an unpairing or a close that arrives once step 2 holds
// completes only after the file is named and indexed: the commit is ordered before
// it, never between the check and the write.
func (c *connState) commit(ctx context.Context, b binding, p upload.Payload) (upload.File, error) {
	s := c.srv
	tmp := &tempFile{workspace: b.sess.Workspace, payload: p}
	defer tmp.discard()
	var writeErr error // answered only after the checks, which come first
	if s.storedIntact(ctx, b.sess, p) {
		p.Unspool()
	} else {
		_, writeErr = tmp.get()
	}
	if s.testPrepared != nil {
		s.testPrepared()
	}

	tx, err := s.cfg.Config.Begin(ctx)
	if err != nil {
		return upload.File{}, err
	}
	defer tx.End()
	defer s.cfg.Pairings.Hold()()
	var f upload.File
	err = s.cfg.Sessions.Locked(b.sess, func() error {
		if err := c.mayCommit(tx.Current(), b.sess); err != nil {
			return err
		}
		if writeErr != nil {
			return writeErr
		}
		var err error
		f, err = s.place(ctx, b.sess, p, tmp)
		return err
	})
	if err != nil {
		return upload.File{}, s.logStorage(err, b.sess)
	}
	return f, nil
}

// tempFile is commit's temporary file, written when the bytes need one: before the
// locks, or (when a stored file changed after storedIntact looked) under them.
type tempFile struct {
	workspace string
	payload   upload.Payload
	prepared  *upload.Prepared
}

func (t *tempFile) get() (*upload.Prepared, error) {
	if t.prepared == nil {
		p, err := t.payload.Prepare(t.workspace)
		if err != nil {
			return nil, err
		}
		t.prepared = p
	}
	return t.prepared, nil
}

// discard removes the file unless it was placed.
func (t *tempFile) discard() {
	if t.prepared != nil {
		t.prepared.Discard()
	}
}

// storedIntact reports whether the session indexed p's bytes and the file at the
// indexed path holds them. place decides again under the locks; this only spares
// a repeat the write.
func (s *Server) storedIntact(ctx context.Context, sess *session.Session, p upload.Payload) bool {
	idx, err := s.cfg.Store.IndexedUpload(ctx, sess.ID, hex.EncodeToString(p.Sum[:]))
	return err == nil && upload.Intact(sess.Workspace, idx.WorkspacePath, int64(len(p.Data)), p.Sum)
}

// logStorage logs the details of a storage failure, which the client's answer
// leaves out (docs/protocol.md, "Error codes"), and returns err.
func (s *Server) logStorage(err error, sess *session.Session) error {
	var se *upload.StorageError
	if errors.As(err, &se) {
		s.log.Error("storing an upload failed", "session", sess.ID, "why", se.Why, "err", se.Err)
	}
	return err
}

// mayCommit is step 3 of commit: the caller's authority resolved again under cfg.
func (c *connState) mayCommit(cfg config.Config, sess *session.Session) error {
	a, err := c.authority(cfg)
	if err != nil {
		return err
	}
	switch {
	case !a.Has(auth.FilesCreate):
		return forbidden(auth.FilesCreate)
	case !a.Principal.Admin && sess.Owner != a.Principal.ID:
		return session.NotFoundError(sess.ID)
	case !a.MayUseAgent(sess.Agent.Alias):
		return agentForbidden(sess.Agent.Alias)
	}
	return nil
}

// place is step 4 of commit: its I/O is a rename, a directory sync and one index
// write. Bytes the session indexed already keep their indexed path; the file there
// is checked and, when it is not those bytes (edited, deleted, replaced by a link),
// the prepared file is written back over it.
func (s *Server) place(ctx context.Context, sess *session.Session, p upload.Payload, tmp *tempFile) (upload.File, error) {
	sum := hex.EncodeToString(p.Sum[:])
	size := int64(len(p.Data))
	filename := p.Filename
	if filename == "" {
		filename = "upload"
	}
	idx, err := s.cfg.Store.IndexedUpload(ctx, sess.ID, sum)
	switch {
	case err == nil:
		if !upload.Intact(sess.Workspace, idx.WorkspacePath, size, p.Sum) {
			prepared, err := tmp.get()
			if err != nil {
				return upload.File{}, err
			}
			if err := prepared.Place(idx.WorkspacePath); err != nil {
				return upload.File{}, err
			}
			s.log.Warn("an indexed upload was changed on disk; wrote it back", "session", sess.ID, "sha256", sum)
		}
		return upload.Entry(sum, filename, idx.WorkspacePath, size, true), nil
	case !errors.Is(err, store.ErrNotFound):
		return upload.File{}, &upload.StorageError{Why: "the upload index could not be read", Err: err}
	}
	rel := upload.Path(sum, p.Filename)
	prepared, err := tmp.get()
	if err != nil {
		return upload.File{}, err
	}
	if err := prepared.Place(rel); err != nil {
		return upload.File{}, err
	}
	err = s.cfg.Store.IndexUpload(ctx, store.Upload{SessionID: sess.ID, SHA256: sum, Filename: filename, WorkspacePath: rel, Size: size})
	if err != nil {
		return upload.File{}, &upload.StorageError{Why: "the upload index could not be written", Err: err}
	}
	return upload.Entry(sum, filename, rel, size, false), nil
}
