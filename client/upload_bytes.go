package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
)

// UploadBytes is Upload for data held in memory: a chunked upload of data as
// filename into the session's workspace, returning its file entry for Prompt.
func (c *Client) UploadBytes(ctx context.Context, sessionID, filename string, data []byte) (*FileEntry, error) {
	sum := sha256.Sum256(data)
	params := map[string]any{"session_id": sessionID, "size_bytes": len(data), "sha256": hex.EncodeToString(sum[:])}
	if filename != "" {
		params["filename"] = filename
	}
	var begin struct {
		UploadID   string `json:"upload_id"`
		ChunkBytes int    `json:"chunk_bytes"`
	}
	if err := c.Call(ctx, "file/upload/begin", params, &begin); err != nil {
		return nil, err
	}
	if begin.ChunkBytes <= 0 {
		begin.ChunkBytes = 1 << 20
	}
	for offset := 0; offset < len(data); offset += begin.ChunkBytes {
		end := min(offset+begin.ChunkBytes, len(data))
		if err := c.sendChunk(ctx, begin.UploadID, int64(offset), data[offset:end]); err != nil {
			return nil, err
		}
	}
	var entry FileEntry
	if err := c.Call(ctx, "file/upload/commit", map[string]any{"upload_id": begin.UploadID}, &entry); err != nil {
		return nil, err
	}
	return &entry, nil
}
