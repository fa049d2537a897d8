package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// OpIndexUpload names the write of IndexUpload, for Options.FailWrites.
const OpIndexUpload = "index_upload"

// Upload is one row of a session's upload index: a file the session stored under
// its content hash (docs/protocol.md, "Files").
type Upload struct {
	SessionID     string
	SHA256        string // lowercase hex
	Filename      string // as given at the first upload of these bytes
	WorkspacePath string // relative to the session's workspace, '/'-separated
	Size          int64
}

// IndexUpload records u in its session's index. A row for the same session and hash
// is kept as it is (the first upload names the file): the index answers where the
// bytes live, and they live at the path the first upload chose. ErrNotFound when the
// session has no row.
func (s *Store) IndexUpload(ctx context.Context, u Upload) error {
	return s.write(ctx, OpIndexUpload, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, u.SessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO uploads (session_id, sha256, filename, workspace_path, size) VALUES (?, ?, ?, ?, ?)
			 ON CONFLICT (session_id, sha256) DO NOTHING`,
			u.SessionID, u.SHA256, u.Filename, u.WorkspacePath, u.Size)
		if err != nil {
			return fmt.Errorf("store: indexing upload %s of session %s: %w", u.SHA256, u.SessionID, err)
		}
		return nil
	})
}

// IndexedUpload returns the index row of sha256 in session id, or ErrNotFound.
func (s *Store) IndexedUpload(ctx context.Context, id, sha256 string) (Upload, error) {
	u := Upload{SessionID: id, SHA256: sha256}
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx,
			`SELECT filename, workspace_path, size FROM uploads WHERE session_id = ? AND sha256 = ?`, id, sha256).
			Scan(&u.Filename, &u.WorkspacePath, &u.Size)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Upload{}, fmt.Errorf("%w: upload %s of session %s", ErrNotFound, sha256, id)
	}
	if err != nil {
		return Upload{}, fmt.Errorf("store: reading upload %s of session %s: %w", sha256, id, err)
	}
	return u, nil
}

// Workspaces returns every distinct workspace a stored session has, killed ones
// included: the places an interrupted upload may have left a temporary file.
func (s *Store) Workspaces(ctx context.Context) ([]string, error) {
	var out []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT workspace FROM sessions ORDER BY workspace`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ws string
			if err := rows.Scan(&ws); err != nil {
				return err
			}
			out = append(out, ws)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing session workspaces: %w", err)
	}
	return out, nil
}
