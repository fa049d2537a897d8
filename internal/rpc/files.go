package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The files family (docs/protocol.md, "Files"): file/attach and the
// three chunked upload methods. Both ways land through the one commit step
// (commit.go).

// fileMethods returns the file methods, and builds the staging area. It runs after
// configMethods, which provides the live config whose [rpc] upload_idle_secs it
// reads at each use.
func (s *Server) fileMethods() []methodRow {
	s.uploads = upload.NewStage[binding](upload.Options{
		Logger: s.log,
		Idle: func() time.Duration {
			if secs := s.cfg.Config.Current().RPC.UploadIdleSecs; secs > 0 {
				return time.Duration(secs) * time.Second
			}
			return upload.IdleLimit
		},
	})
	// The chunked upload methods are local only: an upload stages daemon memory for
	// as long as its connection lives.
	return []methodRow{
		{name: "file/attach", grant: auth.FilesCreate, handler: s.fileAttach},
		{name: "file/upload/begin", grant: auth.FilesCreate, localOnly: true, handler: s.uploadBegin},
		// uploadChunk keeps nothing of its frame once answered: the frame's buffer,
		// 1.4 MB, reads the next chunk.
		{name: "file/upload/chunk", grant: auth.FilesCreate, localOnly: true, schedule: jsonrpc.Recycle, handler: s.uploadChunk},
		{name: "file/upload/commit", grant: auth.FilesCreate, localOnly: true, handler: s.uploadCommit},
	}
}

// uploadTarget finds the session an upload or attach lands in: a session the caller
// owns (else -32000, exactly like a missing one), of an agent it may use.
func (c *connState) uploadTarget(ctx context.Context, id string) (*session.Session, error) {
	if id == "" {
		return nil, missing("session_id")
	}
	sess, err := c.srv.cfg.Sessions.Obtain(ctx, id, c.caller())
	if err != nil {
		return nil, err
	}
	if !authorityFrom(ctx).MayUseAgent(sess.Agent.Alias) {
		return nil, agentForbidden(sess.Agent.Alias)
	}
	return sess, nil
}

type fileAttachFile struct {
	Filename string  `json:"filename"`
	DataB64  *string `json:"data_b64"`
}

type fileAttachParams struct {
	SessionID string           `json:"session_id"`
	Files     []fileAttachFile `json:"files"`
}

type fileAttachResult struct {
	Files []upload.File `json:"files"`
}

// fileAttach lands whole files carried in the request, each through the commit step.
func (s *Server) fileAttach(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p fileAttachParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	sess, err := c.uploadTarget(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	if len(p.Files) == 0 {
		return nil, missing("files")
	}
	payloads := make([]upload.Payload, len(p.Files))
	for i, f := range p.Files {
		if f.DataB64 == nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: every file needs data_b64",
				map[string]any{"param": "files", "index": i})
		}
		if err := upload.CheckFilename(f.Filename); err != nil {
			return nil, withIndex(err, i)
		}
		data, err := upload.Decode([]byte(*f.DataB64), upload.MaxBytes)
		if err != nil {
			return nil, withIndex(err, i)
		}
		payloads[i] = upload.Payload{Filename: f.Filename, Data: data, Sum: sha256.Sum256(data)}
	}
	out := fileAttachResult{Files: make([]upload.File, 0, len(payloads))}
	for _, pl := range payloads {
		f, err := c.commit(ctx, binding{sess}, pl)
		if err != nil {
			return nil, err
		}
		out.Files = append(out.Files, f)
	}
	return out, nil
}

// withIndex adds the zero-based index of the offending file to an error's data.
func withIndex(err error, i int) error {
	e, ok := toWire(err).(*jsonrpc.Error)
	if !ok {
		return err
	}
	data := map[string]any{}
	if len(e.Data) > 0 {
		if json.Unmarshal(e.Data, &data) != nil {
			return err
		}
	}
	data["index"] = i
	return jsonrpc.NewError(e.Code, e.Message, data)
}

type beginParams struct {
	SessionID string `json:"session_id"`
	SizeBytes *int64 `json:"size_bytes"`
	Filename  string `json:"filename"`
	SHA256    string `json:"sha256"`
}

func (s *Server) uploadBegin(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p beginParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SizeBytes == nil {
		return nil, missing("size_bytes")
	}
	sess, err := c.uploadTarget(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	return s.uploads.Begin(c, binding{sess}, *p.SizeBytes, p.Filename, p.SHA256)
}

type chunkResult struct {
	UploadID      string `json:"upload_id"`
	ReceivedBytes int64  `json:"received_bytes"`
}

// uploadChunk decodes data_b64 straight out of the frame into the upload's buffer
// (chunkparams.go reads the params without copying it).
func (s *Server) uploadChunk(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	p, err := readChunkParams(params)
	if err != nil {
		return nil, err
	}
	n, err := s.uploads.Chunk(c, p.uploadID, p.offset, p.data)
	if err != nil {
		return nil, err
	}
	return chunkResult{UploadID: p.uploadID, ReceivedBytes: n}, nil
}

type commitParams struct {
	UploadID string `json:"upload_id"`
}

func (s *Server) uploadCommit(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p commitParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.UploadID == "" {
		return nil, missing("upload_id")
	}
	up, err := s.uploads.Take(c, p.UploadID)
	if err != nil {
		return nil, err
	}
	defer up.Release()
	return c.commit(ctx, up.Bound, up.Payload)
}

// attachmentRef is one session/prompt attachment: a file entry, or just its ref_id.
type attachmentRef struct {
	RefID string `json:"ref_id"`
}

// withAttachments appends the markers of the attachments to the prompt text. Each
// must name an upload the session indexed; the marker is the index's, not the
// client's.
func (s *Server) withAttachments(ctx context.Context, sess *session.Session, prompt string, refs []attachmentRef) (string, error) {
	if len(refs) == 0 {
		return prompt, nil
	}
	var b strings.Builder
	b.WriteString(prompt)
	for i, r := range refs {
		sum, ok := strings.CutPrefix(r.RefID, "sha256:")
		if !ok || len(sum) != 2*sha256.Size {
			return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: attachment %d: ref_id must be sha256:<64 hex digits>", i),
				map[string]any{"param": "attachments", "index": i})
		}
		u, err := s.cfg.Store.IndexedUpload(ctx, sess.ID, strings.ToLower(sum))
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				s.log.Error("reading the upload index", "session", sess.ID, "err", err)
				return "", jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: the upload index could not be read", nil)
			}
			return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams,
				fmt.Sprintf("attachment %d: no upload %s in this session", i, r.RefID),
				map[string]any{"param": "attachments", "index": i, "reason": upload.ReasonUnknownUpload})
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(upload.Marker(u.Filename, u.WorkspacePath))
	}
	return b.String(), nil
}
