// Package feed is the update stream of a session (docs/protocol.md, "Turns and
// session/update", "Delivery" and "No reader is lost"): the seqs, the tail of
// recent updates in memory, the replay log in the store, the cursors of the
// attached connections, lag and the retention that follows the readers. A Feed
// holds its own state under its own locks; a session holds one and calls
// Publish, Attach and committedThrough (through the Hub's writer) on it. It knows
// nothing of turns, tools or JSON-RPC: connections reach it as Subscribers.
package feed

import (
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Defaults of Options.
const (
	// SeqBlock is how many seqs one durable reservation covers: a reservation is
	// a write in the publisher's path, so a block lasts several streamed turns; a
	// restart skips what was left of it, which costs nothing (seqs need only
	// increase).
	SeqBlock = 1 << 16
	// ReplayBytes is rpc.replay_bytes: what the updates a reading connection has
	// not yet been sent may come to, per session, before it is lagged.
	ReplayBytes = 256 << 20
	// RecoverFor is how long, at least, a lagged connection can re-attach from its
	// notice's afterSeq and get everything after it.
	RecoverFor = 60 * time.Second
)

// Options tune a Hub; zero values mean the defaults.
type Options struct {
	Store  *store.Store // required
	Logger *slog.Logger
	// LagAfter is how long a connection may take no update of a session it is
	// behind on before it is lagged; zero means LagAfter.
	LagAfter time.Duration
	// SeqBlock is how many seqs one durable reservation covers; zero means
	// SeqBlock. Tests make it small, to reach a reservation in the middle of a turn.
	SeqBlock uint64
	// ReplayBytes is rpc.replay_bytes; zero means ReplayBytes.
	ReplayBytes int64
	// RecoverFor is how long a lagged connection's afterSeq stays replayable;
	// zero means RecoverFor.
	RecoverFor time.Duration
	// OnLagged, when set, is called each time a connection is detached as lagged
	// (the metrics' zeroclaw_lagged_total), under the feed's lock: it must not
	// block nor call back into the feed.
	OnLagged func()
}

// Hub is what the feeds of one daemon share: the store, the replay log's writer
// (one goroutine storing every session's updates in batches) and the options.
type Hub struct {
	life       context.Context
	st         *store.Store
	log        *slog.Logger
	lagAfter   time.Duration
	seqBlock   uint64
	budget     atomic.Int64 // rpc.replay_bytes (SetReplayBytes)
	recoverFor time.Duration
	onLagged   func() // Options.OnLagged, never nil
	w          *updateLog
}

// NewHub starts the replay log's writer; Close stops it.
func NewHub(life context.Context, o Options) *Hub {
	if o.Store == nil {
		panic("feed.NewHub: Options.Store is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.LagAfter <= 0 {
		o.LagAfter = LagAfter
	}
	if o.SeqBlock == 0 {
		o.SeqBlock = SeqBlock
	}
	if o.ReplayBytes <= 0 {
		o.ReplayBytes = ReplayBytes
	}
	if o.RecoverFor <= 0 {
		o.RecoverFor = RecoverFor
	}
	if o.OnLagged == nil {
		o.OnLagged = func() {}
	}
	h := &Hub{life: life, st: o.Store, log: o.Logger, lagAfter: o.LagAfter, seqBlock: o.SeqBlock,
		recoverFor: o.RecoverFor, onLagged: o.OnLagged}
	h.budget.Store(o.ReplayBytes)
	h.w = newUpdateLog(life, o.Store, o.Logger)
	return h
}

// SetReplayBytes makes n (rpc.replay_bytes, positive) the bound of a reader's
// backlog from the next check on: a config change applies to the open sessions.
func (h *Hub) SetReplayBytes(n int64) {
	if n > 0 {
		h.budget.Store(n)
	}
}

// Flush returns once every update published before the call is stored (or its
// write failed).
func (h *Hub) Flush() { h.w.flush() }

// Close stores what is queued and stops the writer.
func (h *Hub) Close() { h.w.close() }

// Owner is told what the feed cannot do by itself: when a block of seqs cannot be
// reserved, the update is not published, and the owner (the session) ends its
// running turn as a storage failure. It is called on the publishing goroutine,
// with no lock of the feed held but the publishing order's.
type Owner interface {
	ReserveFailed(err error)
}

// Stamped is an update the feed gives its session id and seq before encoding it
// as JSON.
type Stamped interface {
	Stamp(sessionID string, seq uint64)
}

// Feed is the update stream of one session.
type Feed struct {
	hub   *Hub
	id    string
	owner Owner

	// pub serializes publishing, so the order of seq is the order every cursor
	// sees. Nothing else is taken inside it but mu and the writer's queue.
	pub      sync.Mutex
	seq      uint64       // the last seq used
	reserved uint64       // seqs up to this one are durably reserved (store.ReserveSeq)
	chunks   *chunkWriter // made by the first text chunk published

	mu        sync.Mutex
	subs      []*attachment // in the order they attached; few, so a slice
	tail      tail          // the recent updates, for the cursors (tail.go)
	committed uint64        // the replay log has stored the updates up to this seq
	busy      bool          // a turn runs: more is coming (SetBusy)
	closed    bool          // no more attaches (Close)
	ended     bool          // End was called: cursors stop at finalSeq
	finalSeq  uint64        // the last seq of an ended feed
	ret       retention     // what the store must keep for the readers (retain.go)
}

// New returns the feed of session id, whose seqs continue after mark (the store's
// SeqMark: 0 for a new session).
func (h *Hub) New(id string, owner Owner, mark uint64) *Feed {
	return &Feed{hub: h, id: id, owner: owner, seq: mark, reserved: mark, committed: mark}
}

// Seq returns the last seq published.
func (f *Feed) Seq() uint64 {
	f.pub.Lock()
	defer f.pub.Unlock()
	return f.seq
}

// SetBusy tells the feed whether a turn runs: while one does, an emptied tail
// keeps its block for the next updates; idle, it keeps none.
func (f *Feed) SetBusy(busy bool) {
	f.mu.Lock()
	f.busy = busy
	if !busy {
		f.trimTailLocked()
	}
	f.mu.Unlock()
}

// Close refuses further attaches; what was published is still delivered.
func (f *Feed) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

// End is Close once the last update is published: the cursors deliver up to it,
// then leave.
func (f *Feed) End() {
	final := f.Seq()
	f.mu.Lock()
	f.closed, f.ended, f.finalSeq = true, true, final
	for i := 0; i < len(f.subs); {
		if a := f.subs[i]; a.sent >= final {
			f.removeLocked(a)
			continue
		}
		i++
	}
	f.kickLocked()
	f.mu.Unlock()
}

// Subscribers returns the subscribers attached now, in the order they attached.
func (f *Feed) Subscribers() []Subscriber {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Subscriber, 0, len(f.subs))
	for _, a := range f.subs {
		if !a.gone {
			out = append(out, a.sub)
		}
	}
	return out
}

// Publish assigns the next seq to u and queues it for the replay log and the
// tail; once the log has stored it, the cursors of the attached connections
// deliver it. Nothing waits for a connection.
func (f *Feed) Publish(u Stamped) {
	f.pub.Lock()
	defer f.pub.Unlock()
	seq, ok := f.nextSeqLocked()
	if !ok {
		return
	}
	u.Stamp(f.id, seq)
	raw, err := json.Marshal(u)
	if err != nil {
		f.hub.log.Error("encoding an update", "session", f.id, "err", err)
		return
	}
	f.deliverLocked(seq, raw, nil)
}

// PublishChunk is Publish of a text chunk (agent_message_chunk or
// agent_thought_chunk), which a streamed reply sends by the thousand: encoded by
// hand into a buffer the feed reuses, with no update on the heap.
func (f *Feed) PublishChunk(turnID, typ, text string) {
	f.pub.Lock()
	defer f.pub.Unlock()
	seq, ok := f.nextSeqLocked()
	if !ok {
		return
	}
	if f.chunks == nil {
		f.chunks = new(chunkWriter)
	}
	w := f.chunks
	raw, shape, err := w.enc.chunk(w.buf[:0], f.id, turnID, seq, typ, text)
	if err != nil {
		f.hub.log.Error("encoding an update", "session", f.id, "type", typ, "err", err)
		return
	}
	if cap(raw) <= maxChunkBuffer {
		w.buf = raw // reused: the replay log and the tail copy what they keep
	}
	f.deliverLocked(seq, raw, shape)
}

// ErrReserve wraps the store's error when a block of seqs could not be reserved.
var ErrReserve = errors.New("feed: reserving update seqs")

// PublishStored publishes an update its caller may store itself, in a
// transaction of its own, before it is shown: store gets the update's seq and
// whether earlier updates still wait for the replay log (then storing it with
// the caller's transaction would show it before them), and returns the payload
// and whether it stored it. An error from store publishes nothing and is
// returned; a failed reservation returns an error wrapping ErrReserve.
func (f *Feed) PublishStored(store func(seq uint64, behind bool) (raw []byte, stored bool, err error)) error {
	f.pub.Lock()
	defer f.pub.Unlock()
	if err := f.reserveLocked(); err != nil {
		return fmt.Errorf("%w: %w", ErrReserve, err)
	}
	seq := f.seq + 1
	f.mu.Lock()
	behind := f.committed < f.seq
	f.mu.Unlock()
	raw, stored, err := store(seq, behind)
	if err != nil {
		return err
	}
	if !stored {
		f.deliverLocked(seq, raw, nil)
		return nil
	}
	// Stored and committed by the caller: to the tail, and visible at once; the
	// replay log does not store it again. The earlier updates are committed
	// already (behind was false).
	f.seq = seq
	f.mu.Lock()
	f.tailLocked(seq, raw)
	f.committedLocked(seq)
	f.mu.Unlock()
	return nil
}

// maxChunkBuffer bounds the encoding buffer a feed keeps between chunks.
const maxChunkBuffer = 64 << 10

// chunkWriter is what a feed that streamed keeps for encoding text chunks: the
// encoder with its prefix, and the buffer they are encoded into.
type chunkWriter struct {
	enc encoder
	buf []byte
}

// nextSeqLocked returns the seq the next update gets, reserving a block of them
// durably first when the reserved ones are used up. The caller holds pub.
//
// When the reservation cannot be stored, no seq is handed out: one that is not
// reserved could be handed out again after a crash. The update is dropped and the
// owner ends its running turn as a storage failure (docs/protocol.md, "Storage
// failures").
func (f *Feed) nextSeqLocked() (uint64, bool) {
	if err := f.reserveLocked(); err != nil {
		f.hub.log.Error("reserving seqs failed; the update is not sent and the turn ends", "session", f.id, "err", err)
		if f.owner != nil {
			f.owner.ReserveFailed(fmt.Errorf("reserving update seqs: %w", err))
		}
		return 0, false
	}
	return f.seq + 1, true
}

// reserveLocked makes sure the next seq is reserved, reserving a block durably
// when the reserved ones are used up: no seq is handed out twice, not even across
// a crash. The caller holds pub.
func (f *Feed) reserveLocked() error {
	if f.seq+1 <= f.reserved {
		return nil
	}
	block := f.hub.seqBlock
	if err := f.hub.st.ReserveSeq(f.hub.life, f.id, f.seq+block); err != nil {
		return err
	}
	f.reserved = f.seq + block
	return nil
}

// deliverLocked makes seq (from nextSeqLocked) the last one used and queues raw,
// whose shape may be nil, for the replay log and, while connections are
// attached, the tail. raw may be reused once it returns: the tail copies it, and
// the log refers to the tail's copy (not written again before the log stored it:
// recycle.go), or copies it when the tail keeps none. The caller holds pub.
//
// The tail takes it first: the replay log may commit it, and cursors deliver up
// to what is committed, as soon as it is queued; one that found a committed seq
// missing from the tail would read it from the store, and when the log failed to
// store it, be lagged for an update it was about to be sent.
func (f *Feed) deliverLocked(seq uint64, raw []byte, shape *store.Shape) {
	f.seq = seq
	f.mu.Lock()
	raw, kept := f.tailLocked(seq, raw)
	f.mu.Unlock()
	f.hub.w.add(f, store.Update{SessionID: f.id, Seq: seq, Payload: raw, Shape: shape}, kept)
}

// tailLocked adds raw to the tail while connections are attached, and returns the
// tail's copy of it and true; with none attached the tail is dropped, and raw is
// returned as it is, with false. It counts what the readers' backlog grows by
// (retain.go). mu is held.
func (f *Feed) tailLocked(seq uint64, raw []byte) ([]byte, bool) {
	f.ret.published(seq, len(raw))
	if len(f.subs) == 0 {
		if f.tail.segs != nil {
			f.tail.reset()
		}
		return raw, false
	}
	p := f.tail.add(seq, raw, f.reusableBlockLocked)
	if seq%64 == 0 {
		f.trimTailLocked()
		f.checkBacklogLocked()
	}
	return p, true
}
