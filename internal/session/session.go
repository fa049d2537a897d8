package session

import (
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Session is one live agent session.
type Session struct {
	ID        string
	Owner     string // principal id
	Agent     *Agent
	Workspace string

	mgr  *Manager
	slot chan struct{} // held by the running turn: one turn at a time
	done chan struct{} // closed by shutdown

	// pub serializes publishing, so the order of seq is the order every subscriber
	// sees. It is held while offering an update to the subscribers (which never
	// waits); nothing else is taken inside it except mu.
	pub      sync.Mutex
	seq      uint64       // the last seq used
	reserved uint64       // seqs up to this one are durably reserved (store.ReserveSeq)
	chunks   *chunkWriter // made by the first text chunk published

	mu         sync.Mutex
	subs       []*attachment      // in the order they attached; few, so a slice
	tail       tail               // the recent updates, for the cursors (tail.go)
	committed  uint64             // the replay log has stored the updates up to this seq
	ended      bool               // shutdown is done publishing: cursors stop at finalSeq
	finalSeq   uint64             // the last seq of an ended session
	context    []provider.Message // the model context after the last turn
	contextIDs []int64            // the checkpoint id of each message of context; 0 when unknown
	checkpoint int64              // the id of the last checkpoint stored
	waiting    int                // prompts queued behind the running turn
	turn       *runningTurn
	stale      bool                   // a turn failed in storage: context must be reloaded (storage.go)
	unfinished string                 // the turn a storage failure left running in the store, if any
	approvals  map[string]chan string // requestId -> decision
	always     map[string]bool        // tools allowed for the rest of the session
	closed     bool
	ctl        store.Controls // what session/set chose (controls.go)
	auto       autoCompaction // what automatic compaction knows (autocompact.go)

	ctlMu sync.Mutex // serializes session/set: its store write and what it publishes

	opMu sync.Mutex            // held while an operation id is looked up and claimed
	ops  map[string]*operation // claimed operation ids (operation.go)

	clientTools map[Subscriber]map[string]*clientTool // per connection, under mu (clienttools.go)
}

type runningTurn struct {
	id      string
	cancel  context.CancelCauseFunc
	storage context.Context // the turn's context without its cancel, for storage
	begun   bool            // the store has the turn (BeginTurn succeeded); only the turn touches it
	// promptStored: beginTurn stored the prompt, so the hook skips the first message.
	promptStored bool
	storageErr   error   // the first write of the turn that failed (storage.go)
	op           string  // the prompt's operation id, "" when none
	calls        int     // tool calls named so far; only the turn touches it
	ids          []int64 // the ids of the checkpoints the turn stored, in order; only the turn touches it
	// final is the turn's answer, held by the hook to be stored with the turn's end.
	final *provider.Message
	// steers are the session/steer texts waiting to join the turn, under s.mu; nil
	// for a turn that takes none (a compaction) (steer.go).
	steers *steerInbox
	// compacted: automatic compaction replaced the turn's context (autocompact.go);
	// only the turn touches it.
	compacted bool
}

// stored records that the turn's next checkpoint was stored as id.
func (t *runningTurn) stored(s *Session, id int64) {
	t.ids = append(t.ids, id)
	s.mu.Lock()
	s.checkpoint = id
	s.mu.Unlock()
}

// callID names the turn's next tool call "tc_<turn>_<n>": unique within the session
// (SPEC §18), short enough for every provider's limit on ids.
func (t *runningTurn) callID(string) string {
	t.calls++
	return fmt.Sprintf("tc_%s_%d", strings.TrimPrefix(t.id, "turn_"), t.calls)
}

// Why a turn was cancelled, for the log.
var (
	errCancelRequested = errors.New("session/cancel")
	errDaemonShutdown  = errors.New("daemon_shutdown")
	errSessionClosed   = errors.New("session closed")
)

func newSession(m *Manager, id, owner string, a *Agent, workspace string) *Session {
	return &Session{
		ID: id, Owner: owner, Agent: a, Workspace: workspace, mgr: m,
		slot:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		approvals: make(map[string]chan string),
		always:    make(map[string]bool),
		ops:       make(map[string]*operation),
	}
}

// State is "running" while a turn runs or waits, else "idle".
func (s *Session) State() string {
	if s.idle() {
		return "idle"
	}
	return "running"
}

func (s *Session) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn == nil && s.waiting == 0
}

// MessageCount is the number of rows in the visible transcript.
func (s *Session) MessageCount(ctx context.Context) int {
	row, err := s.mgr.st.Session(ctx, s.ID)
	if err != nil {
		return 0
	}
	return row.MessageCount
}

// enqueue waits for the turn slot.
func (s *Session) enqueue(ctx context.Context) error {
	select {
	case s.slot <- struct{}{}:
		return nil
	default:
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errNotFound(s.ID)
	}
	if s.waiting >= s.mgr.opts.MaxQueued {
		s.mu.Unlock()
		return errBusy("%d prompts are already waiting", s.mgr.opts.MaxQueued)
	}
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	timer := time.NewTimer(s.mgr.opts.QueueWait)
	defer timer.Stop()
	select {
	case s.slot <- struct{}{}:
		return nil
	case <-timer.C:
		return errBusy("the running turn did not finish within %s", s.mgr.opts.QueueWait)
	case <-s.done:
		return errNotFound(s.ID)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel cancels the running turn and reports whether one was running.
func (s *Session) Cancel() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == nil {
		return false
	}
	s.turn.cancel(errCancelRequested)
	return true
}

// Decisions of session/approve.
const (
	AllowOnce   = "allow_once"
	AllowAlways = "allow_always"
	RejectOnce  = "reject_once"
)

// Approve answers a pending approval request; false when it is unknown or over.
func (s *Session) Approve(requestID, decision string) (bool, error) {
	switch decision {
	case AllowOnce, AllowAlways, RejectOnce:
	default:
		return false, errParam("decision", "",
			fmt.Sprintf("invalid params: decision %q: want allow_once, allow_always or reject_once", decision))
	}
	s.mu.Lock()
	ch, ok := s.approvals[requestID]
	delete(s.approvals, requestID)
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	ch <- decision // buffered: the waiting turn reads it
	return true, nil
}

// shutdown ends the session: the running turn is cancelled, queued prompts fail,
// subscribers are detached.
//
// Approvals the attached clients were asked for end with it: before they are
// detached, each is told request_resolved, as when another client answered first,
// so that no client is left showing a question nobody can answer any more.
func (s *Session) shutdown(cause error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	turnID := ""
	if s.turn != nil {
		turnID = s.turn.id
		s.turn.cancel(cause)
	}
	pending := make([]string, 0, len(s.approvals))
	for id := range s.approvals {
		pending = append(pending, id)
	}
	s.mu.Unlock()
	slices.Sort(pending)
	for _, id := range pending {
		s.publish(&Update{TurnID: turnID, Type: RequestResolved, RequestID: id})
	}
	// The cursors deliver up to here, then leave (delivery.go).
	s.pub.Lock()
	final := s.seq
	s.pub.Unlock()
	s.mu.Lock()
	s.ended, s.finalSeq = true, final
	for _, a := range slices.Clone(s.subs) {
		if a.sent >= final {
			s.removeLocked(a)
		}
	}
	s.kickLocked()
	s.mu.Unlock()
}

// SeqBlock is how many seqs one durable reservation covers (Options.SeqBlock): a
// reservation is a write in the publisher's path, so a block lasts several
// streamed turns; a restart skips what was left of it, which costs nothing (seqs
// need only increase).
const SeqBlock = 1 << 16

// publish assigns the next seq and queues u for the replay log and the session's
// tail; once the log has stored it, the cursors of the attached subscribers deliver
// it (delivery.go). Nothing waits for a subscriber.
func (s *Session) publish(u *Update) {
	if u.chunk() {
		s.publishChunk(u.TurnID, u.Type, *u.Text)
		return
	}
	s.pub.Lock()
	defer s.pub.Unlock()
	seq, ok := s.nextSeqLocked()
	if !ok {
		return
	}
	u.Seq, u.SessionID = seq, s.ID
	raw, err := json.Marshal(u)
	if err != nil {
		s.mgr.log.Error("encoding an update", "session", s.ID, "type", u.Type, "err", err)
		return
	}
	s.deliverLocked(u.Seq, raw)
}

// publishChunk is publish of a text chunk (agent_message_chunk or
// agent_thought_chunk), which a streamed reply sends by the thousand: encoded by
// hand into a buffer the session reuses, with no Update on the heap.
func (s *Session) publishChunk(turnID, typ, text string) {
	s.pub.Lock()
	defer s.pub.Unlock()
	seq, ok := s.nextSeqLocked()
	if !ok {
		return
	}
	if s.chunks == nil {
		s.chunks = new(chunkWriter)
	}
	w := s.chunks
	raw, shape, err := w.enc.chunk(w.buf[:0], s.ID, turnID, seq, typ, text)
	if err != nil {
		s.mgr.log.Error("encoding an update", "session", s.ID, "type", typ, "err", err)
		return
	}
	if cap(raw) <= maxChunkBuffer {
		w.buf = raw // reused: the replay log and the subscribers copy what they keep
	}
	s.deliverShapedLocked(seq, raw, shape)
}

// maxChunkBuffer bounds the encoding buffer a session keeps between chunks.
const maxChunkBuffer = 64 << 10

// chunkWriter is what a session that streamed keeps for encoding text chunks: the
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
// running turn ends as a storage failure (SPEC §16); publishing runs on the turn's
// goroutine, the only one that may fail it.
func (s *Session) nextSeqLocked() (uint64, bool) {
	if err := s.reserveLocked(); err != nil {
		s.mgr.log.Error("reserving seqs failed; the update is not sent and the turn ends", "session", s.ID, "err", err)
		s.mu.Lock()
		t, closed := s.turn, s.closed
		s.mu.Unlock()
		if t != nil && !closed { // a closed session's turn is ending anyway (and shutdown publishes off it)
			t.failStorage(fmt.Errorf("reserving update seqs: %w", err))
		}
		return 0, false
	}
	return s.seq + 1, true
}

// reserveLocked makes sure the next seq is reserved, reserving a block durably
// when the reserved ones are used up: no seq is handed out twice, not even across
// a crash. The caller holds pub.
func (s *Session) reserveLocked() error {
	if s.seq+1 <= s.reserved {
		return nil
	}
	block := s.mgr.opts.SeqBlock
	if err := s.mgr.st.ReserveSeq(s.mgr.life, s.ID, s.seq+block); err != nil {
		return err
	}
	s.reserved = s.seq + block
	return nil
}

// deliverLocked makes seq (from nextSeqLocked) the last one used and queues raw
// for the replay log and, while connections are attached, the tail. raw may be
// reused once it returns: the tail copies it, and the log refers to the tail's
// copy (not written again before the log stored it: recycle.go), or copies it when
// the tail keeps none. The caller holds pub.
//
// The tail takes it first: the replay log may commit it, and cursors deliver up
// to what is committed, as soon as it is queued; one that found a committed seq
// missing from the tail would read it from the store, and when the log failed to
// store it, be lagged for an update it was about to be sent.
func (s *Session) deliverLocked(seq uint64, raw []byte) {
	s.deliverShapedLocked(seq, raw, nil)
}

// deliverShapedLocked is deliverLocked of an update whose payload is of shape,
// which spares the replay log finding it (store.Shape).
func (s *Session) deliverShapedLocked(seq uint64, raw []byte, shape *store.Shape) {
	s.seq = seq
	s.mu.Lock()
	raw, kept := s.tailLocked(seq, raw)
	s.mu.Unlock()
	s.mgr.updates.add(s, store.Update{SessionID: s.ID, Seq: seq, Payload: raw, Shape: shape}, kept)
}

// tailLocked adds raw to the tail while connections are attached, and returns the
// tail's copy of it and true; with none attached the tail is dropped, and raw is
// returned as it is, with false. mu is held.
func (s *Session) tailLocked(seq uint64, raw []byte) ([]byte, bool) {
	if len(s.subs) == 0 {
		if s.tail.segs != nil {
			s.tail.reset()
		}
		return raw, false
	}
	p := s.tail.add(seq, raw, s.reusableBlockLocked)
	if seq%64 == 0 {
		s.trimTailLocked()
	}
	return p, true
}

// deliverStoredLocked is deliverLocked for an update the caller stored itself, in
// a transaction of its own that has committed (the prompt's user_message, stored
// with the prompt): it goes to the tail, and is visible at once; the replay log
// does not store it again. The session's earlier updates must be committed
// already (committed is the seq up to which every update is stored). The caller
// holds pub.
func (s *Session) deliverStoredLocked(seq uint64, raw []byte) {
	s.seq = seq
	s.mu.Lock()
	s.tailLocked(seq, raw)
	s.committedLocked(seq)
	s.mu.Unlock()
}

func (s *Session) capableSubscribers() []Subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Subscriber
	for _, a := range s.subs {
		sub := a.sub
		if !a.gone && sub.CanElicit() {
			out = append(out, sub)
		}
	}
	return out
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
