package upload

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"fmt"
	"hash"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The limits of the seed's "Chunked uploads".
const (
	ChunkBytes     = 1 << 20   // chunk_bytes: what a client should send per chunk
	MaxBytes       = 10 << 20  // max_bytes: the per-file limit, file/attach's too
	PerConnection  = 4         // uploads one connection may stage at a time
	Budget         = 256 << 20 // staged across all connections
	MaxFilename    = 255       // bytes
	IdleLimit      = 5 * time.Minute
	metadataCharge = 256 // per upload, besides its strings: an empty payload is not free
)

// Bound is what an upload is bound to at begin, as the layer above knows it (for the
// daemon: the exact live session, its owner and its agent). The stage keeps it,
// charges the strings it holds against the budget, and hands it back whole when the
// upload is taken for its commit; it never looks inside.
type Bound interface {
	// MetadataBytes is the length of the strings the binding keeps.
	MetadataBytes() int
	// Workspace is the directory whose uploads/ the upload lands in: an upload of
	// more than one chunk is written to a temporary file there as its chunks arrive
	// (spool.go). "" writes nothing before the commit.
	Workspace() string
}

// Options build a Stage. Zero values mean the limits above.
type Options struct {
	// Idle returns how long an upload may sit idle; it is asked each time, so a
	// configuration change applies to uploads already staged. nil: IdleLimit.
	Idle          func() time.Duration
	Budget        int64
	PerConnection int
	Logger        *slog.Logger
}

// Stage is the staging area of chunked uploads. It is safe for concurrent use.
type Stage[B Bound] struct {
	log     *slog.Logger
	idle    func() time.Duration
	budget  int64
	perConn int

	mu      sync.Mutex
	used    int64 // charged against the budget
	uploads map[key]*staged[B]
	conns   map[any]int  // staged uploads per connection
	dropped []*staged[B] // discarded under mu, their buffers freed by unlock

	spares spares // the mapped buffers of landed and dropped uploads, for the next
}

// key names an upload: the connection that began it, and its random id. Lookups
// go by both, so no other connection can name it.
type key struct {
	conn any
	id   string
}

type staged[B Bound] struct {
	key    key
	spares *spares // its stage's
	bound  B
	name   string // filename as given
	sha    string // declared hash, lowercase hex, or ""
	size   int64
	charge int64
	timer  *time.Timer

	last time.Time   // last use; guarded by Stage.mu
	gone atomic.Bool // discarded or committing: no more chunks

	mu       sync.Mutex // serializes chunks and the commit
	buf      []byte     // size+2 bytes, allocated at the first chunk: buf[:received] is accepted, the rest is room to decode into
	mapped   bool       // buf is mapped memory (buffer_unix.go): freed once, by free or Taken.Release
	starts   []int64    // where each accepted chunk starts, in order
	received int64
	hash     hash.Hash // nil when spooled: the spool hashes
	saved    []byte    // the hash's state before the chunk being decoded
	spool    *spool    // hashing buf[:received] and writing it to a temporary file, or nil
}

// NewStage returns an empty staging area.
func NewStage[B Bound](opts Options) *Stage[B] {
	if opts.Idle == nil {
		opts.Idle = func() time.Duration { return IdleLimit }
	}
	if opts.Budget <= 0 {
		opts.Budget = Budget
	}
	if opts.PerConnection <= 0 {
		opts.PerConnection = PerConnection
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Stage[B]{
		log: opts.Logger, idle: opts.Idle, budget: opts.Budget, perConn: opts.PerConnection,
		uploads: make(map[key]*staged[B]), conns: make(map[any]int),
	}
}

// Begun is the result of file/upload/begin.
type Begun struct {
	UploadID   string `json:"upload_id"`
	ChunkBytes int    `json:"chunk_bytes"`
	MaxBytes   int    `json:"max_bytes"`
}

// CheckFilename refuses a filename longer than MaxFilename bytes.
func CheckFilename(name string) error {
	if len(name) > MaxFilename {
		return refused(ReasonFilenameTooLong, fmt.Sprintf("filename is %d bytes; the limit is %d", len(name), MaxFilename),
			"limit_bytes", MaxFilename)
	}
	return nil
}

func tooLarge(size int64) error {
	return refused(ReasonTooLarge, fmt.Sprintf("the file is %d bytes; the limit is %d", size, MaxBytes), "limit_bytes", MaxBytes)
}

// Begin stages a new upload of size bytes for conn, bound to b. The caller has
// checked that the principal may upload into b's session. When the upload does not
// fit in the budget, every upload idle past the deadline is reclaimed first, of any
// connection.
func (st *Stage[B]) Begin(conn any, b B, size int64, filename, sha string) (Begun, error) {
	switch {
	case size < 0:
		return Begun{}, &ParamError{Param: "size_bytes", Message: "size_bytes must not be negative"}
	case size > MaxBytes:
		return Begun{}, tooLarge(size)
	}
	if err := CheckFilename(filename); err != nil {
		return Begun{}, err
	}
	if sha != "" {
		if len(sha) != 2*sha256.Size || !isHex(sha) {
			return Begun{}, &ParamError{Param: "sha256", Message: "sha256 must be 64 hexadecimal digits"}
		}
		sha = strings.ToLower(sha)
	}
	u := &staged[B]{
		spares: &st.spares, bound: b, name: filename, sha: sha, size: size, hash: sha256.New(),
		charge: size + metadataCharge + int64(b.MetadataBytes()+len(filename)+len(sha)),
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	u.key = key{conn: conn, id: "upl_" + hex.EncodeToString(rnd[:])}

	st.mu.Lock()
	defer st.unlock()
	if st.conns[conn] >= st.perConn {
		return Begun{}, refused(ReasonTooManyUploads,
			fmt.Sprintf("this connection already stages %d uploads; commit or finish one first", st.perConn), "limit", st.perConn)
	}
	now := time.Now()
	if st.used+u.charge > st.budget {
		st.reclaimLocked(now)
	}
	if st.used+u.charge > st.budget {
		return Begun{}, refused(ReasonBudget, "the daemon's upload staging budget is full; try again later",
			"limit_bytes", st.budget)
	}
	st.used += u.charge
	u.last = now
	st.uploads[u.key] = u
	st.conns[conn]++
	u.timer = time.AfterFunc(st.idle(), func() { st.expire(u) })
	return Begun{UploadID: u.key.id, ChunkBytes: ChunkBytes, MaxBytes: MaxBytes}, nil
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// reclaimLocked discards every upload idle past the deadline, whoever owns it.
func (st *Stage[B]) reclaimLocked(now time.Time) {
	idle := st.idle()
	for _, u := range st.uploads {
		if now.Sub(u.last) >= idle {
			st.log.Info("reclaimed an idle upload", "idle", now.Sub(u.last).Round(time.Second), "bytes", u.size)
			st.dropLocked(u, true)
		}
	}
}

// expire runs when u's idle timer fires: it discards u when it has been idle long
// enough under the current limit, else waits again.
func (st *Stage[B]) expire(u *staged[B]) {
	st.mu.Lock()
	defer st.unlock()
	if st.uploads[u.key] != u {
		return
	}
	idle, since := st.idle(), time.Since(u.last)
	if since >= idle {
		st.log.Info("discarded an idle upload", "idle", since.Round(time.Second), "bytes", u.size)
		st.dropLocked(u, true)
		return
	}
	u.timer.Reset(idle - since)
}

// dropLocked takes u out of the tables; with refund, its charge too.
func (st *Stage[B]) dropLocked(u *staged[B], refund bool) {
	delete(st.uploads, u.key)
	if st.conns[u.key.conn]--; st.conns[u.key.conn] <= 0 {
		delete(st.conns, u.key.conn)
	}
	u.gone.Store(true)
	u.timer.Stop()
	if refund {
		st.used -= u.charge
		st.dropped = append(st.dropped, u)
	}
}

// unlock unlocks st.mu, then frees the buffers of the uploads dropped under it.
// Each is freed under its own lock, which a chunk being decoded into it holds: the
// lock order is an upload's, then the stage's, never the reverse.
func (st *Stage[B]) unlock() {
	dropped := st.dropped
	st.dropped = nil
	st.mu.Unlock()
	for _, u := range dropped {
		u.mu.Lock()
		u.free()
		u.mu.Unlock()
	}
}

// free frees u's buffer; u.mu is held, and u is gone, so no chunk will use it. Its
// spool is stopped first, and its file removed unless a commit took it.
func (u *staged[B]) free() {
	if u.spool != nil {
		u.spool.abort()
		u.spool = nil
	}
	u.spares.free(u.buf, u.mapped)
	u.buf, u.mapped = nil, false
}

// lookup finds conn's upload id and marks it used.
func (st *Stage[B]) lookup(conn any, id string) (*staged[B], error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	u, ok := st.uploads[key{conn, id}]
	if !ok {
		return nil, unknownUpload(id)
	}
	u.last = time.Now()
	return u, nil
}

// Discard drops every upload conn stages; its connection closed.
func (st *Stage[B]) Discard(conn any) {
	st.mu.Lock()
	defer st.unlock()
	if st.conns[conn] == 0 {
		return
	}
	for k, u := range st.uploads {
		if k.conn == conn {
			st.dropLocked(u, true)
		}
	}
}

// Staged reports how many uploads are staged and how many bytes the budget is
// charged with (the server logs it at shutdown).
func (st *Stage[B]) Staged() (uploads int, charged int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.uploads), st.used
}

// Chunk accepts the bytes of data_b64 (b64, as it stands in the frame) at offset
// into conn's upload id and returns the bytes received so far. offset must equal
// that count; an exact resend of an accepted chunk is acknowledged unchanged, so a
// client may retry after a lost response; anything else is refused with its
// reason. The bytes are decoded straight into the upload's buffer and hashed as
// they are decoded, or, for an upload that is spooled, hashed by its spool while
// the next chunk arrives.
func (st *Stage[B]) Chunk(conn any, id string, offset int64, b64 []byte) (int64, error) {
	u, err := st.lookup(conn, id)
	if err != nil {
		return 0, err
	}
	enc := encodingOf(len(b64))
	if err := checkDecodedLen(enc, len(b64), u.size); err != nil {
		return 0, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone.Load() {
		return 0, unknownUpload(id)
	}
	if u.buf == nil {
		u.buf, u.mapped = u.spares.alloc(int(u.size) + 2) // DecodedLen counts padding as bytes
		if ws := u.bound.Workspace(); u.size >= spoolMin && ws != "" {
			u.spool = startSpool(st.log, ws, u.buf[:u.size:u.size], u.hash)
			u.hash = nil
		}
	}
	room := u.buf[u.received:]
	if n, ok := exactDecodedLen(enc, b64); offset == u.received && ok && n <= int64(len(room))-2 {
		// The common case, a next chunk that fits: decoded in place and hashed as
		// it goes. A refusal leaves received and the hash as they were.
		if len(b64) > 0 {
			if u.hash != nil {
				u.saved, _ = u.hash.(encoding.BinaryAppender).AppendBinary(u.saved[:0])
			}
			if !decodeHashed(enc, room, b64, n, u.hash) {
				if u.hash != nil {
					u.hash.(encoding.BinaryUnmarshaler).UnmarshalBinary(u.saved)
				}
				data, err := decode(enc, b64, u.size)
				if err != nil {
					return 0, err
				}
				return u.accept(offset, data)
			}
		}
		return u.commitChunk(offset, n), nil
	}
	data, err := decode(enc, b64, u.size)
	if err != nil {
		return 0, err
	}
	return u.accept(offset, data)
}

// accept takes data at offset when it was not decoded in place: a chunk that does
// not fit, a resend, or a misplaced one.
func (u *staged[B]) accept(offset int64, data []byte) (int64, error) {
	switch {
	case offset == u.received:
		if offset+int64(len(data)) > u.size {
			return 0, refused(ReasonTooLarge,
				fmt.Sprintf("the chunk ends at byte %d, past the declared size %d", offset+int64(len(data)), u.size),
				"size_bytes", u.size, "received_bytes", u.received)
		}
		copy(u.buf[u.received:], data)
		if u.hash != nil {
			u.hash.Write(data)
		}
		return u.commitChunk(offset, int64(len(data))), nil
	case offset >= 0 && offset < u.received && u.isAccepted(offset, data):
		return u.received, nil
	}
	return 0, refused(ReasonBadOffset,
		fmt.Sprintf("offset %d: the next chunk starts at %d (only an exact resend of an accepted chunk may repeat one)", offset, u.received),
		"received_bytes", u.received)
}

// commitChunk records n bytes decoded and hashed at offset == received.
func (u *staged[B]) commitChunk(offset, n int64) int64 {
	if n > 0 {
		u.starts = append(u.starts, offset)
		u.received += n
		if u.spool != nil {
			u.spool.advance(u.received)
		}
	}
	return u.received
}

// isAccepted reports whether data at offset is exactly a chunk already accepted.
func (u *staged[B]) isAccepted(offset int64, data []byte) bool {
	i := sort.Search(len(u.starts), func(i int) bool { return u.starts[i] >= offset })
	if i == len(u.starts) || u.starts[i] != offset {
		return false
	}
	end := u.received
	if i+1 < len(u.starts) {
		end = u.starts[i+1]
	}
	return string(u.buf[offset:end]) == string(data)
}

// Payload is what one commit lands: the bytes, their hash, and the name the client
// gave.
type Payload struct {
	Filename string // "" is "upload"
	Data     []byte
	Sum      [sha256.Size]byte
	spool    *spool // the chunks written to a temporary file as they arrived, or nil
}

// Prepare returns p's bytes written and synced to a temporary file in workspace's
// uploads directory: the file its chunks were written to as they arrived, when that
// is complete and synced, else a new one (the package's Prepare).
func (p Payload) Prepare(workspace string) (*Prepared, error) {
	if p.spool != nil {
		if prepared := p.spool.finish(workspace); prepared != nil {
			return prepared, nil
		}
	}
	return Prepare(workspace, p.Data)
}

// Unspool removes the temporary file p's chunks were written to, if any, when the
// commit needs no file (a repeat of bytes stored intact). A Prepare after it writes
// a new one.
func (p Payload) Unspool() {
	if p.spool != nil {
		p.spool.abort()
	}
}

// Taken is a complete upload taken off the stage for its commit. Its charge stays
// against the budget until Release.
type Taken[B Bound] struct {
	Bound   B
	Payload Payload
	release func()
}

// Release frees the bytes and refunds the budget: they are landed or dropped, and
// nothing may use Payload.Data afterwards.
func (t Taken[B]) Release() { t.release() }

// Take takes conn's upload id off the stage once every declared byte has arrived and
// a declared hash matches. The upload is gone afterwards, except when it is
// incomplete.
func (st *Stage[B]) Take(conn any, id string) (Taken[B], error) {
	u, err := st.lookup(conn, id)
	if err != nil {
		return Taken[B]{}, err
	}
	u.mu.Lock()
	if u.gone.Load() {
		u.mu.Unlock()
		return Taken[B]{}, unknownUpload(id)
	}
	if u.received < u.size {
		u.mu.Unlock()
		return Taken[B]{}, refused(ReasonIncomplete,
			fmt.Sprintf("%d of %d bytes received", u.received, u.size), "received_bytes", u.received, "size_bytes", u.size)
	}
	var sum [sha256.Size]byte
	if u.spool != nil {
		sum = u.spool.sum()
	} else {
		u.hash.Sum(sum[:0])
	}
	st.mu.Lock()
	taken := st.uploads[u.key] == u
	if taken {
		st.dropLocked(u, false) // the charge stays until the bytes are landed
	}
	st.mu.Unlock()
	u.mu.Unlock()
	if !taken {
		return Taken[B]{}, unknownUpload(id)
	}
	release := sync.OnceFunc(func() {
		u.mu.Lock()
		u.free()
		u.mu.Unlock()
		st.mu.Lock()
		st.used -= u.charge
		st.mu.Unlock()
	})
	if u.sha != "" && u.sha != hex.EncodeToString(sum[:]) {
		release()
		return Taken[B]{}, refused(ReasonSHA256Mismatch, "the bytes received do not match the declared sha256; the upload is discarded",
			"sha256", hex.EncodeToString(sum[:]))
	}
	return Taken[B]{Bound: u.bound, Payload: Payload{Filename: u.name, Data: u.buf[:u.size:u.size], Sum: sum, spool: u.spool}, release: release}, nil
}
