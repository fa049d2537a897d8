package store

import (
	"context"
	"fmt"
)

// autoVacuumIncremental is SQLite's auto_vacuum value INCREMENTAL.
const autoVacuumIncremental = 2

// ensureIncrementalVacuum makes the database's auto_vacuum INCREMENTAL, so that the
// pages a session/delete frees can be given back to the file system
// (docs/protocol.md, "A daemon that runs for months";
// vacuumFree runs after every delete). The setting takes effect by one VACUUM (a
// database in WAL mode does not take it otherwise, not even a new one), which
// rewrites an existing file once, at the first start of this version. It runs on
// the writer, outside a transaction.
func (s *Store) ensureIncrementalVacuum(ctx context.Context) error {
	var mode int
	if err := s.w.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return fmt.Errorf("store: reading auto_vacuum of %s: %w", s.path, err)
	}
	if mode == autoVacuumIncremental {
		return nil
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return fmt.Errorf("store: setting auto_vacuum of %s: %w", s.path, err)
	}
	if _, err := s.w.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("store: converting %s to incremental vacuum: %w", s.path, err)
	}
	return nil
}

// vacuumFree gives the database's free pages back to the file system. A failure
// (a full disk) leaves them free inside the file, where later writes reuse them;
// the next delete tries again.
func (s *Store) vacuumFree(ctx context.Context) {
	s.w.ExecContext(ctx, "PRAGMA incremental_vacuum")
	s.ckpt.wrote()
}
