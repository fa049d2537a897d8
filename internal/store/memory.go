package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The memories of the agents (docs/protocol.md, "Memory"): rows of the memories
// table, searched through the FTS5 index memories_fts. The store keeps them and
// answers queries; scoring, embedding and recall are internal/memory's.

// Names of the memory writes, as passed to Options.FailWrites.
const (
	OpMemoryPut    = "memory_put"
	OpMemoryDelete = "memory_delete"
	OpMemoryEmbed  = "memory_embed"
)

// Memory is one stored memory. EmbeddingModel is the model of its embedding (""
// when it has none); Embedding is nil when it has none or when a query did not
// read it.
type Memory struct {
	ID             string
	Agent          string
	Owner          string
	Key            string // "" for none
	Content        string
	Tags           []string
	Created        time.Time
	Updated        time.Time
	Embedding      []float32
	EmbeddingModel string
}

// MemoryHit is a memory a keyword search found, with its BM25 score turned
// positive (larger is better; SQLite's bm25() is the negative).
type MemoryHit struct {
	Memory
	BM25 float64
}

// memoryIndexSQL creates the full-text index and the triggers that keep it in step
// with the memories table. It runs at every start (EnsureMemoryIndex), so that an
// index that went missing is made again.
const memoryIndexSQL = `
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    content, key, tags, content='memories', content_rowid='num', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, key, tags) VALUES (new.num, new.content, new.key, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, key, tags) VALUES ('delete', old.num, old.content, old.key, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_update AFTER UPDATE OF content, key, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, key, tags) VALUES ('delete', old.num, old.content, old.key, old.tags);
    INSERT INTO memories_fts(rowid, content, key, tags) VALUES (new.num, new.content, new.key, new.tags);
END;`

// EnsureMemoryIndex makes the full-text index of the memories present and sound:
// a missing one is created and filled from the memories table, one that fails
// FTS5's integrity check is rebuilt, and one too damaged even to rebuild is
// dropped and made again. It reports what it did ("" when the index was sound).
func (s *Store) EnsureMemoryIndex(ctx context.Context) (string, error) {
	var existed int
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'memories_fts'").Scan(&existed); err != nil {
		return "", fmt.Errorf("store: checking the memory index: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, memoryIndexSQL); err != nil {
		return "", s.remakeMemoryIndex(ctx, fmt.Errorf("creating: %w", err))
	}
	if existed == 0 {
		if _, err := s.w.ExecContext(ctx, "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')"); err != nil {
			return "", fmt.Errorf("store: filling the new memory index: %w", err)
		}
		return "created", nil
	}
	if _, err := s.w.ExecContext(ctx, "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)"); err == nil {
		// Merged into one segment, a search opens one b-tree cursor per word, not
		// one per segment that the inserts since the last start left.
		if _, err := s.w.ExecContext(ctx, "INSERT INTO memories_fts(memories_fts) VALUES ('optimize')"); err != nil {
			return "", fmt.Errorf("store: merging the memory index: %w", err)
		}
		return "", nil
	}
	if _, err := s.w.ExecContext(ctx, "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')"); err != nil {
		if err := s.remakeMemoryIndex(ctx, err); err != nil {
			return "", err
		}
	}
	return "rebuilt", nil
}

// remakeMemoryIndex drops the index with its shadow tables and makes it again.
func (s *Store) remakeMemoryIndex(ctx context.Context, cause error) error {
	drop := `DROP TABLE IF EXISTS memories_fts;`
	for _, shadow := range []string{"data", "idx", "content", "docsize", "config"} {
		drop += "DROP TABLE IF EXISTS memories_fts_" + shadow + ";"
	}
	if _, err := s.w.ExecContext(ctx, drop); err != nil {
		return fmt.Errorf("store: the memory index is damaged (%v) and cannot be dropped: %w", cause, err)
	}
	if _, err := s.w.ExecContext(ctx, memoryIndexSQL+"INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');"); err != nil {
		return fmt.Errorf("store: the memory index is damaged (%v) and cannot be made again: %w", cause, err)
	}
	return nil
}

// Reader statements of the recall's queries, prepared once per Store: parsing
// them cost a fifth of a recall.
const (
	qSearchMemories = `SELECT m.num, m.id, m.agent, m.owner, m.key, m.content, m.tags, m.created, m.updated, m.embedding_model, -memories_fts.rank
		FROM memories_fts JOIN memories m ON m.num = memories_fts.rowid
		WHERE memories_fts MATCH ? AND m.agent = ? AND (? = '' OR m.owner = ?)
		ORDER BY memories_fts.rank LIMIT ?`
	qSearchNewest = `SELECT m.num, m.id, m.agent, m.owner, m.key, m.content, m.tags, m.created, m.updated, m.embedding_model, -memories_fts.rank
		FROM memories_fts JOIN memories m ON m.num = memories_fts.rowid
		WHERE memories_fts MATCH ? AND m.agent = ? AND (? = '' OR m.owner = ?)
		ORDER BY memories_fts.rowid DESC LIMIT ?`
	qCountTerm = "SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"
)

// readerStmt returns the reader pool's prepared statement of query.
func (s *Store) readerStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	if st, ok := s.memStmts[query]; ok {
		return st, nil
	}
	st, err := s.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.memStmts == nil {
		s.memStmts = map[string]*sql.Stmt{}
	}
	s.memStmts[query] = st
	return st, nil
}

const memoryColumns = "num, id, agent, owner, key, content, tags, created, updated, embedding_model"

func scanMemory(sc interface{ Scan(...any) error }, extra ...any) (Memory, int64, error) {
	var m Memory
	var num, created, updated int64
	var key, model sql.NullString
	var tags string
	if err := sc.Scan(append([]any{&num, &m.ID, &m.Agent, &m.Owner, &key, &m.Content, &tags, &created, &updated, &model}, extra...)...); err != nil {
		return Memory{}, 0, err
	}
	m.Key, m.Tags, m.EmbeddingModel = key.String, splitTags(tags), model.String
	m.Created, m.Updated = fromMS(created), fromMS(updated)
	return m, num, nil
}

func splitTags(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, " ")
}

// PutMemory stores m. With a Key, a memory of the same agent, owner and key is
// replaced (keeping its id and created time) and replaced is true; else m is new
// and m.ID names it. Created and Updated are the store's clock. The memory's
// embedding is m.Embedding (nil: none; a replaced memory loses its old one).
func (s *Store) PutMemory(ctx context.Context, m Memory) (out Memory, replaced bool, err error) {
	now := s.now()
	m.Created, m.Updated = now, now
	err = s.write(ctx, OpMemoryPut, func(tx *sql.Tx) error {
		if m.Key != "" {
			var id string
			var created int64
			err := tx.QueryRowContext(ctx, "SELECT id, created FROM memories WHERE agent = ? AND owner = ? AND key = ?",
				m.Agent, m.Owner, m.Key).Scan(&id, &created)
			switch {
			case err == nil:
				m.ID, m.Created, replaced = id, fromMS(created), true
				_, err = tx.ExecContext(ctx, `UPDATE memories SET content = ?, tags = ?, updated = ?, embedding = ?, embedding_model = ?
					WHERE id = ?`, m.Content, strings.Join(m.Tags, " "), ms(now), vectorBlob(m.Embedding), nullable(m.EmbeddingModel), id)
				if err != nil {
					return fmt.Errorf("store: replacing memory %s: %w", id, err)
				}
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("store: looking up memory key %q: %w", m.Key, err)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO memories (id, agent, owner, key, content, tags, created, updated, embedding, embedding_model)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, m.ID, m.Agent, m.Owner, nullable(m.Key), m.Content, strings.Join(m.Tags, " "),
			ms(now), ms(now), vectorBlob(m.Embedding), nullable(m.EmbeddingModel))
		if err != nil {
			return fmt.Errorf("store: storing memory %s: %w", m.ID, err)
		}
		return nil
	})
	if err != nil {
		return Memory{}, false, err
	}
	return m, replaced, nil
}

// GetMemory returns the memory id, ErrNotFound when there is none.
func (s *Store) GetMemory(ctx context.Context, id string) (Memory, error) {
	row := s.r.QueryRowContext(ctx, "SELECT "+memoryColumns+" FROM memories WHERE id = ?", id)
	m, _, err := scanMemory(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, fmt.Errorf("%w: memory %s", ErrNotFound, id)
	}
	if err != nil {
		return Memory{}, fmt.Errorf("store: reading memory %s: %w", id, err)
	}
	return m, nil
}

// DeleteMemory removes the memory id if owner owns it (any owner's when owner is
// ""); ErrNotFound when there is no such memory of that owner.
func (s *Store) DeleteMemory(ctx context.Context, id, owner string) (Memory, error) {
	var m Memory
	err := s.write(ctx, OpMemoryDelete, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, "SELECT "+memoryColumns+" FROM memories WHERE id = ? AND (? = '' OR owner = ?)", id, owner, owner)
		var err error
		m, _, err = scanMemory(row)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: memory %s", ErrNotFound, id)
		}
		if err != nil {
			return fmt.Errorf("store: reading memory %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM memories WHERE id = ?", id); err != nil {
			return fmt.Errorf("store: deleting memory %s: %w", id, err)
		}
		return nil
	})
	return m, err
}

// MemoryFilter selects memories to list: those of Agent (every agent's when "")
// and Owner (every owner's when ""), newest first, after the cursor a listing
// returned, at most Limit.
type MemoryFilter struct {
	Agent, Owner string
	Cursor       string
	Limit        int
}

// ListMemories lists memories by f, with the cursor of the next page ("" after
// the last).
func (s *Store) ListMemories(ctx context.Context, f MemoryFilter) ([]Memory, string, error) {
	before := int64(math.MaxInt64)
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n <= 0 {
			return nil, "", ErrBadCursor
		}
		before = n
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+memoryColumns+` FROM memories
		WHERE num < ? AND (? = '' OR agent = ?) AND (? = '' OR owner = ?) ORDER BY num DESC LIMIT ?`,
		before, f.Agent, f.Agent, f.Owner, f.Owner, f.Limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("store: listing memories: %w", err)
	}
	defer rows.Close()
	out := []Memory{}
	var last int64
	for rows.Next() {
		m, num, err := scanMemory(rows)
		if err != nil {
			return nil, "", fmt.Errorf("store: listing memories: %w", err)
		}
		if len(out) == f.Limit {
			return out, strconv.FormatInt(last, 10), rows.Err()
		}
		out, last = append(out, m), num
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: listing memories: %w", err)
	}
	return out, "", nil
}

// SearchMemories runs the FTS5 query match over the memories of agent and owner
// (every owner's when owner is "") and returns the best limit by BM25; with
// newest, the newest limit that match, with their BM25 (which then costs limit
// computations, not one per match).
func (s *Store) SearchMemories(ctx context.Context, agent, owner, match string, limit int, newest bool) ([]MemoryHit, error) {
	q := qSearchMemories
	if newest {
		q = qSearchNewest
	}
	st, err := s.readerStmt(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("store: searching memories: %w", err)
	}
	rows, err := st.QueryContext(ctx, match, agent, owner, owner, limit)
	if err != nil {
		return nil, fmt.Errorf("store: searching memories: %w", err)
	}
	defer rows.Close()
	var out []MemoryHit
	for rows.Next() {
		var h MemoryHit
		var err error
		if h.Memory, _, err = scanMemory(rows, &h.BM25); err != nil {
			return nil, fmt.Errorf("store: searching memories: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: searching memories: %w", err)
	}
	return out, nil
}

// MemoryVectors calls fn with each memory of agent and owner (every owner's when
// owner is "") that has an embedding of model, in no particular order.
func (s *Store) MemoryVectors(ctx context.Context, agent, owner, model string, fn func(m Memory)) error {
	rows, err := s.r.QueryContext(ctx, "SELECT "+memoryColumns+`, embedding FROM memories
		WHERE agent = ? AND (? = '' OR owner = ?) AND embedding_model = ? AND embedding IS NOT NULL`, agent, owner, owner, model)
	if err != nil {
		return fmt.Errorf("store: reading memory embeddings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var blob []byte
		m, _, err := scanMemory(rows, &blob)
		if err != nil {
			return fmt.Errorf("store: reading memory embeddings: %w", err)
		}
		m.Embedding, m.EmbeddingModel = blobVector(blob), model
		fn(m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: reading memory embeddings: %w", err)
	}
	return nil
}

// MissingEmbeddings returns up to limit memories of agent (every owner's) that
// have no embedding of model, oldest first, after the memory numbered after (0:
// from the start), with the number to continue after.
func (s *Store) MissingEmbeddings(ctx context.Context, agent, model string, after int64, limit int) ([]Memory, int64, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+memoryColumns+` FROM memories
		WHERE agent = ? AND num > ? AND (embedding IS NULL OR embedding_model IS NOT ?) ORDER BY num LIMIT ?`,
		agent, after, model, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("store: finding memories without embeddings: %w", err)
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		m, num, err := scanMemory(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("store: finding memories without embeddings: %w", err)
		}
		out, after = append(out, m), num
	}
	return out, after, rows.Err()
}

// CountMissingEmbeddings counts the memories of agent without an embedding of model.
func (s *Store) CountMissingEmbeddings(ctx context.Context, agent, model string) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE agent = ? AND (embedding IS NULL OR embedding_model IS NOT ?)`,
		agent, model).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: counting memories without embeddings: %w", err)
	}
	return n, nil
}

// SetMemoryEmbedding stores vec as the embedding (of model) of the memory id, if
// its content is still content (a memory replaced meanwhile keeps none): it
// reports whether it did.
func (s *Store) SetMemoryEmbedding(ctx context.Context, id, content, model string, vec []float32) (bool, error) {
	var n int64
	err := s.write(ctx, OpMemoryEmbed, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE memories SET embedding = ?, embedding_model = ? WHERE id = ? AND content = ?",
			vectorBlob(vec), model, id, content)
		if err != nil {
			return fmt.Errorf("store: storing the embedding of memory %s: %w", id, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

func vectorBlob(v []float32) any {
	if v == nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func blobVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// MemoryDimension is the size of the stored embeddings of model (0: none stored).
func (s *Store) MemoryDimension(ctx context.Context, model string) (int, error) {
	var n sql.NullInt64
	err := s.r.QueryRowContext(ctx, "SELECT length(embedding) / 4 FROM memories WHERE embedding_model = ? AND embedding IS NOT NULL LIMIT 1", model).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: reading the size of memory embeddings: %w", err)
	}
	return int(n.Int64), nil
}

// MemoryTermCounts returns, for each of terms (lowercase words), how many
// memories (of every agent) hold it, counting no further than upTo: counting a
// word costs as many steps as the memories it counts.
func (s *Store) MemoryTermCounts(ctx context.Context, terms []string, upTo int) (map[string]int, error) {
	out := make(map[string]int, len(terms))
	if len(terms) == 0 {
		return out, nil
	}
	prepared, err := s.readerStmt(ctx, qCountTerm)
	if err != nil {
		return nil, fmt.Errorf("store: counting memory terms: %w", err)
	}
	err = s.read(ctx, func(tx *sql.Tx) error {
		st := tx.StmtContext(ctx, prepared)
		defer st.Close()
		for _, t := range terms {
			var n int
			if err := st.QueryRowContext(ctx, `"`+strings.ReplaceAll(t, `"`, `""`)+`"`, upTo).Scan(&n); err != nil {
				return err
			}
			out[t] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: counting memory terms: %w", err)
	}
	return out, nil
}
