package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Errors a caller may test with errors.Is.
var (
	// ErrNotFound: no such session (or turn).
	ErrNotFound = errors.New("store: not found")
	// ErrExists: CreateSession with an id that is taken.
	ErrExists = errors.New("store: session already exists")
	// ErrUnsupportedSurface: Recover of a session another interaction surface wrote.
	// The row is left as it is, so that surface's own recovery can still read it.
	ErrUnsupportedSurface = errors.New("store: unsupported interaction surface")
	// ErrBadCursor: a ListSessions cursor this store did not hand out.
	ErrBadCursor = errors.New("store: invalid cursor")
)

// SurfaceRPC is the interaction_surface of the sessions this daemon writes.
const SurfaceRPC = "rpc"

// DefaultKeep is how many session/update notifications are kept per session for
// replay when Options.Keep is zero (rpc.replay_events).
const DefaultKeep = 10_000

// Names of the write operations, as passed to Options.FailWrites.
const (
	OpCreate        = "create"
	OpKill          = "kill"
	OpDelete        = "delete"
	OpBeginTurn     = "begin_turn"
	OpCheckpoint    = "checkpoint"
	OpEndTurn       = "end_turn"
	OpRecover       = "recover"
	OpInterrupt     = "interrupt"
	OpTrim          = "trim"
	OpReserveSeq    = "reserve_seq"
	OpAppendUpdates = "append_updates"
)

// Options tune a Store; the zero value is the production setting.
type Options struct {
	// Keep is how many updates AppendUpdates keeps per session at least (0:
	// DefaultKeep); up to Keep/16 more wait for the next trim.
	Keep int
	// Readers is the size of the read connection pool (0: 4).
	Readers int
	// Now is the clock for last_activity and turn start times (nil: time.Now).
	Now func() time.Time
	// FailWrites, when set, is asked by every write just before it commits, with the
	// write's Op name; a non-nil error rolls the whole transaction back and is
	// returned, wrapped. It exists so tests can prove that a failed write changes
	// nothing (a failed trim sends no history_trimmed, a failed kill leaves the
	// session alive). Nil in production.
	FailWrites func(op string) error
}

// Store is the durable session store: one SQLite file in WAL mode. It is safe for
// concurrent use.
//
// Writes go through one connection (w, MaxOpenConns 1, BEGIN IMMEDIATE): SQLite
// allows one writer at a time anyway, and queueing writers in Go rather than in
// SQLite's busy handler means no SQLITE_BUSY and a fair FIFO order. Reads use a
// separate pool of query_only connections (r): in WAL mode they read a consistent
// snapshot without waiting for the writer, so a long replay (Updates) or a
// session/list never holds up the checkpoint appends of running turns, and a write
// never waits for a slow reader.
type Store struct {
	path string
	w    *sql.DB
	r    *sql.DB
	keep int
	now  func() time.Time
	fail func(op string) error

	// lost: per session, the highest seq of replay-log updates whose write failed
	// (updates.go); their older neighbours are dropped at the next write that works,
	// so a replay never crosses the gap.
	lostMu sync.Mutex
	lost   map[string]uint64

	// stmts are the writer's prepared statements of the replay log's group commit
	// (updates.go, preparedQueries), prepared at Open, read-only after: a commit of a
	// streaming turn runs several, and preparing each every time cost as much as
	// running it.
	stmts map[string]*sql.Stmt

	// memStmts are the reader pool's prepared statements of the memory searches
	// (memory.go), prepared on first use.
	memMu    sync.Mutex
	memStmts map[string]*sql.Stmt

	rows rowCache      // the transcript rows of running turns' checkpoints (turns.go)
	ckpt *checkpointer // copies the WAL into the database file (checkpoint.go)
}

// Open opens (creating it 0600 if needed) the database at path, tightens an
// existing file to 0600, and brings its schema up to date. A database written by
// a newer program is refused with ErrSchemaTooNew.
//
// Settings: WAL, synchronous=NORMAL (a commit is a write to the WAL, no fsync: a
// process crash loses nothing committed, a power loss may lose the last commits
// but never corrupts), busy_timeout=5000, foreign_keys=ON.
func Open(path string, opts Options) (*Store, error) {
	if strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("store: database path %q: must not contain '?' or start with \"file:\"", path)
	}
	if err := privateFile(path); err != nil {
		return nil, err
	}
	s := &Store{path: path, keep: opts.Keep, now: opts.Now, fail: opts.FailWrites, lost: make(map[string]uint64)}
	if s.keep <= 0 {
		s.keep = DefaultKeep
	}
	if s.now == nil {
		s.now = time.Now
	}
	readers := opts.Readers
	if readers <= 0 {
		readers = 4
	}

	common, err := connParams()
	if err != nil {
		return nil, err
	}
	// The writer never checkpoints: the checkpointer does, on its own connection.
	w, err := sql.Open("sqlite", path+"?"+common+"&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate&_pragma=wal_autocheckpoint(0)"+walLimitParam)
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w = w
	ctx := context.Background()
	if err := s.checkWAL(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.ensureIncrementalVacuum(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := migrate(ctx, w, path, len(migrations)); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.prepare(ctx, preparedQueries); err != nil {
		for _, st := range s.stmts {
			st.Close()
		}
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", path+"?"+common+"&_query_only=1")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: opening %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	c, err := openCheckpointDB(path)
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	s.ckpt = newCheckpointer(c, w, path)
	return s, nil
}

// checkWAL makes sure the journal mode took: SQLite silently keeps the old mode on
// a file system without shared memory, and our crash safety assumes WAL.
func (s *Store) checkWAL(ctx context.Context) error {
	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("store: opening %s: %w", s.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("store: %s: journal mode is %q, want WAL (does the file system support it?)", s.path, mode)
	}
	return nil
}

// privateFile creates path 0600 if it is missing and tightens it, and the WAL and
// shared-memory files beside it, to 0600 if they exist. SQLite creates those two
// with the mode of the database file, so once it is 0600 no file of the store is
// ever readable by others, at no instant.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: creating %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: restricting %s to its owner: %w", p, err)
		}
	}
	return nil
}

// commonParams are the connection parameters of every connection to the database,
// with the VFS of connParams.
const commonParams = "_busy_timeout=5000&_foreign_keys=1"

// connParams is commonParams with the VFS that gathers a WAL file's writes
// (walvfs.go), registered the first time.
func connParams() (string, error) {
	vfs, err := registerWALVFS()
	if err != nil {
		return "", err
	}
	return commonParams + vfs, nil
}

// Close closes the database. Calls still running fail.
func (s *Store) Close() error {
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.memMu.Lock()
	for _, st := range s.memStmts {
		errs = append(errs, st.Close())
	}
	s.memMu.Unlock()
	return errors.Join(append(errs, s.ckpt.close(), s.r.Close(), s.w.Close())...)
}

// prepare prepares the queries on the writer, before any transaction holds its one
// connection.
func (s *Store) prepare(ctx context.Context, queries []string) error {
	s.stmts = make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("store: opening %s: preparing %q: %w", s.path, q, err)
		}
		s.stmts[q] = st
	}
	return nil
}

// stmt returns query, one that prepare prepared, for use in the writer's
// transaction tx; any other query is prepared in tx.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts[query]; ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// write runs fn in one write transaction named op: FailWrites is asked after fn
// and before the commit, and any error rolls everything back.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if s.fail != nil {
		if err := s.fail(op); err != nil {
			return fmt.Errorf("store: %s: %w", op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: committing: %w", op, err)
	}
	s.ckpt.wrote()
	s.ckpt.bound()
	return nil
}

// read runs fn in one read transaction: every query in it sees the same snapshot.
func (s *Store) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sessionExists reports ErrNotFound for a missing session.
func sessionExists(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	return existence(tx.QueryRowContext(ctx, qSessionExists, id).Scan(&one), id)
}

// sessionWritten is sessionExists in a write transaction, with the prepared query.
func (s *Store) sessionWritten(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	return existence(s.queryRow(ctx, tx, qSessionExists, []any{id}, &one), id)
}

// existence is the error of a lookup of session id that returned err.
func existence(err error, id string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("store: looking up session %s: %w", id, err)
	}
	return nil
}
