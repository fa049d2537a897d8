package client

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// chunkTries is how often one chunk is sent before Upload gives up.
const chunkTries = 3

// defaultChunkTimeout bounds the wait for one chunk's answer; then it is sent again.
const defaultChunkTimeout = 30 * time.Second

// WithChunkTimeout sets how long Upload waits for the answer to one chunk before it
// sends the chunk again (default 30 s).
func WithChunkTimeout(d time.Duration) Option { return func(o *options) { o.chunkTimeout = d } }

// Upload stores the file at path in the session's workspace with a chunked upload
// (file/upload/begin, chunk, commit) and returns its file entry, to pass to Prompt.
// progress (when not nil) is called with the bytes acknowledged so far and the size,
// first with 0. A chunk whose answer does not arrive in time is sent again at the same
// offset (the daemon acknowledges a repeated chunk unchanged), at most three times.
// The daemon refuses files over 10 MiB (an *Error with Reason "too_large").
func (c *Client) Upload(ctx context.Context, sessionID, path string, progress func(done, total int64)) (*FileEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("uploading %s: not a regular file", path)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	size := st.Size()
	var begin struct {
		UploadID   string `json:"upload_id"`
		ChunkBytes int64  `json:"chunk_bytes"`
	}
	err = c.Call(ctx, "file/upload/begin", map[string]any{
		"session_id": sessionID, "size_bytes": size,
		"filename": filepath.Base(path), "sha256": hex.EncodeToString(sum.Sum(nil)),
	}, &begin)
	if err != nil {
		return nil, err
	}
	if begin.ChunkBytes <= 0 {
		begin.ChunkBytes = 1 << 20
	}
	if progress != nil {
		progress(0, size)
	}
	buf := make([]byte, begin.ChunkBytes)
	for offset := int64(0); offset < size; {
		n, err := f.ReadAt(buf, offset)
		if n == 0 && err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if err := c.sendChunk(ctx, begin.UploadID, offset, buf[:n]); err != nil {
			return nil, err
		}
		offset += int64(n)
		if progress != nil {
			progress(offset, size)
		}
	}
	var entry FileEntry
	if err := c.Call(ctx, "file/upload/commit", map[string]any{"upload_id": begin.UploadID}, &entry); err != nil {
		return nil, err
	}
	return &entry, nil
}

// sendChunk sends one chunk, again when its answer is late.
func (c *Client) sendChunk(ctx context.Context, uploadID string, offset int64, data []byte) error {
	params := map[string]any{"upload_id": uploadID, "offset": offset, "data_b64": base64.StdEncoding.EncodeToString(data)}
	timeout := c.opts.chunkTimeout
	if timeout <= 0 {
		timeout = defaultChunkTimeout
	}
	var err error
	for range chunkTries {
		var r struct {
			ReceivedBytes int64 `json:"received_bytes"`
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err = c.Call(cctx, "file/upload/chunk", params, &r)
		cancel()
		if err == nil {
			if want := offset + int64(len(data)); r.ReceivedBytes != want {
				return fmt.Errorf("upload %s: the daemon holds %d bytes after the chunk at %d, want %d", uploadID, r.ReceivedBytes, offset, want)
			}
			return nil
		}
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("upload %s: no answer to the chunk at offset %d after %d tries: %w", uploadID, offset, chunkTries, err)
}
