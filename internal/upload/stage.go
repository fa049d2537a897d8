package upload

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
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

// Options build a Stage. Zero values mean the limits above.
type Options struct {
	Sessions *session.Manager // required to land files: sessions are locked through it, its store holds the index
	// Idle returns how long an upload may sit idle; it is asked each time, so a
	// configuration change applies to uploads already staged. nil: IdleLimit.
	Idle          func() time.Duration
	Budget        int64
	PerConnection int
	Logger        *slog.Logger
}

// Stage is the staging area of chunked uploads, and the commit step (Land). It is
// safe for concurrent use.
type Stage struct {
	sessions *session.Manager
	index    *store.Store
	log      *slog.Logger
	idle     func() time.Duration
	budget   int64
	perConn  int

	mu      sync.Mutex
	used    int64 // charged against the budget
	uploads map[key]*staged
	conns   map[any]int // staged uploads per connection
}

// key names an upload: the connection that began it, and its random id. Lookups
// go by both, so no other connection can name it.
type key struct {
	conn any
	id   string
}

type staged struct {
	key     key
	binding Binding
	name    string // filename as given
	sha     string // declared hash, lowercase hex, or ""
	size    int64
	charge  int64
	timer   *time.Timer

	last time.Time   // last use; guarded by Stage.mu
	gone atomic.Bool // discarded or committing: no more chunks

	mu       sync.Mutex // serializes chunks and the commit
	pieces   [][]byte   // accepted chunks, in offset order
	offsets  []int64    // offsets[i] is where pieces[i] starts
	received int64
	hash     hash.Hash
}

// NewStage returns an empty staging area.
func NewStage(opts Options) *Stage {
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
	st := &Stage{
		sessions: opts.Sessions, log: opts.Logger,
		idle: opts.Idle, budget: opts.Budget, perConn: opts.PerConnection,
		uploads: make(map[key]*staged), conns: make(map[any]int),
	}
	if opts.Sessions != nil {
		st.index = opts.Sessions.Store()
	}
	return st
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
func (st *Stage) Begin(conn any, b Binding, size int64, filename, sha string) (Begun, error) {
	switch {
	case size < 0:
		return Begun{}, badParam("size_bytes", "size_bytes must not be negative")
	case size > MaxBytes:
		return Begun{}, tooLarge(size)
	}
	if err := CheckFilename(filename); err != nil {
		return Begun{}, err
	}
	if sha != "" {
		if len(sha) != 2*sha256.Size || !isHex(sha) {
			return Begun{}, badParam("sha256", "sha256 must be 64 hexadecimal digits")
		}
		sha = strings.ToLower(sha)
	}
	u := &staged{
		binding: b, name: filename, sha: sha, size: size, hash: sha256.New(),
		charge: size + metadataCharge + int64(len(b.Session.ID)+len(b.Owner)+len(b.Agent)+len(filename)+len(sha)),
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	u.key = key{conn: conn, id: "upl_" + hex.EncodeToString(rnd[:])}

	st.mu.Lock()
	defer st.mu.Unlock()
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
func (st *Stage) reclaimLocked(now time.Time) {
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
func (st *Stage) expire(u *staged) {
	st.mu.Lock()
	defer st.mu.Unlock()
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
func (st *Stage) dropLocked(u *staged, refund bool) {
	delete(st.uploads, u.key)
	if st.conns[u.key.conn]--; st.conns[u.key.conn] <= 0 {
		delete(st.conns, u.key.conn)
	}
	u.gone.Store(true)
	u.timer.Stop()
	if refund {
		st.used -= u.charge
	}
}

func (st *Stage) refund(u *staged) {
	st.mu.Lock()
	st.used -= u.charge
	st.mu.Unlock()
}

// lookup finds conn's upload id and marks it used.
func (st *Stage) lookup(conn any, id string) (*staged, error) {
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
func (st *Stage) Discard(conn any) {
	st.mu.Lock()
	defer st.mu.Unlock()
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
// charged with.
func (st *Stage) Staged() (uploads int, charged int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.uploads), st.used
}

// Decode decodes a data_b64 param (standard base64, padding optional), refusing
// more than limit decoded bytes before decoding.
func Decode(b64 string, limit int64) ([]byte, error) {
	enc := base64.StdEncoding
	if len(b64)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	if n := int64(enc.DecodedLen(len(b64))); n > limit+2 { // DecodedLen may overcount by padding
		return nil, refused(ReasonTooLarge, fmt.Sprintf("the data is larger than %d bytes", limit), "limit_bytes", limit)
	}
	out := make([]byte, enc.DecodedLen(len(b64)))
	n, err := enc.Decode(out, []byte(b64))
	if err != nil {
		return nil, refused(ReasonBadBase64, "data_b64 is not valid base64: "+err.Error())
	}
	if int64(n) > limit {
		return nil, refused(ReasonTooLarge, fmt.Sprintf("the data is larger than %d bytes", limit), "limit_bytes", limit)
	}
	return out[:n], nil
}

// Chunk accepts the bytes of data_b64 at offset into conn's upload id and returns
// the bytes received so far. offset must equal that count; an exact resend of an
// accepted chunk is acknowledged unchanged, so a client may retry after a lost
// response; anything else is refused with its reason.
func (st *Stage) Chunk(conn any, id string, offset int64, b64 string) (int64, error) {
	u, err := st.lookup(conn, id)
	if err != nil {
		return 0, err
	}
	data, err := Decode(b64, u.size)
	if err != nil {
		return 0, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone.Load() {
		return 0, unknownUpload(id)
	}
	switch {
	case offset == u.received:
		if offset+int64(len(data)) > u.size {
			return 0, refused(ReasonTooLarge,
				fmt.Sprintf("the chunk ends at byte %d, past the declared size %d", offset+int64(len(data)), u.size),
				"size_bytes", u.size, "received_bytes", u.received)
		}
		if len(data) > 0 {
			u.pieces = append(u.pieces, data)
			u.offsets = append(u.offsets, offset)
			u.hash.Write(data)
			u.received += int64(len(data))
		}
		return u.received, nil
	case offset >= 0 && offset < u.received && u.isAccepted(offset, data):
		return u.received, nil
	}
	return 0, refused(ReasonBadOffset,
		fmt.Sprintf("offset %d: the next chunk starts at %d (only an exact resend of an accepted chunk may repeat one)", offset, u.received),
		"received_bytes", u.received)
}

// isAccepted reports whether data at offset is exactly a chunk already accepted.
func (u *staged) isAccepted(offset int64, data []byte) bool {
	i := sort.Search(len(u.offsets), func(i int) bool { return u.offsets[i] >= offset })
	return i < len(u.offsets) && u.offsets[i] == offset && bytes.Equal(u.pieces[i], data)
}

// Commit lands conn's upload id once every declared byte has arrived and a
// declared hash matches, through Land. The upload is gone afterwards, landed or
// not, except when it is incomplete.
func (st *Stage) Commit(ctx context.Context, conn any, id string, g Guard) (File, error) {
	u, err := st.lookup(conn, id)
	if err != nil {
		return File{}, err
	}
	u.mu.Lock()
	if u.gone.Load() {
		u.mu.Unlock()
		return File{}, unknownUpload(id)
	}
	if u.received < u.size {
		u.mu.Unlock()
		return File{}, refused(ReasonIncomplete,
			fmt.Sprintf("%d of %d bytes received", u.received, u.size), "received_bytes", u.received, "size_bytes", u.size)
	}
	var sum [sha256.Size]byte
	u.hash.Sum(sum[:0])
	st.mu.Lock()
	taken := st.uploads[u.key] == u
	if taken {
		st.dropLocked(u, false) // the charge stays until the bytes are landed
	}
	st.mu.Unlock()
	u.mu.Unlock()
	if !taken {
		return File{}, unknownUpload(id)
	}
	defer st.refund(u)
	if u.sha != "" && u.sha != hex.EncodeToString(sum[:]) {
		return File{}, refused(ReasonSHA256Mismatch, "the bytes received do not match the declared sha256; the upload is discarded",
			"sha256", hex.EncodeToString(sum[:]))
	}
	return st.Land(ctx, u.binding, Payload{Filename: u.name, Pieces: u.pieces, Size: u.size, Sum: sum}, g)
}
