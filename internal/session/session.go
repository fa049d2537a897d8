package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/feed"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Session is one live agent session.
type Session struct {
	ID        string
	Owner     string // principal id
	Agent     *Agent
	Workspace string

	mgr  *Manager
	feed *feed.Feed    // the session's updates: seqs, tail, replay log, cursors
	slot chan struct{} // held by the running turn: one turn at a time
	done chan struct{} // closed by shutdown

	mu         sync.Mutex
	context    []llm.Message // the model context after the last turn
	contextIDs []int64       // the checkpoint id of each message of context; 0 when unknown
	checkpoint int64         // the id of the last checkpoint stored
	waiting    int           // prompts queued behind the running turn
	turn       *runningTurn
	stale      bool                   // a turn failed in storage: context must be reloaded (storage.go)
	unfinished string                 // the turn a storage failure left running in the store, if any
	approvals  map[string]chan string // requestId -> decision
	always     map[string]bool        // tools allowed for the rest of the session
	closed     bool
	ctl        store.Controls // what session/set chose (controls.go)

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
	final *llm.Message
}

// stored records that the turn's next checkpoint was stored as id.
func (t *runningTurn) stored(s *Session, id int64) {
	t.ids = append(t.ids, id)
	s.mu.Lock()
	s.checkpoint = id
	s.mu.Unlock()
}

// callID names the turn's next tool call "tc_<turn>_<n>": unique within the session
// (docs/protocol.md, "session/update"), short enough for every provider's limit on ids.
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

// newSession returns a session whose update seqs continue after mark (the store's
// SeqMark: 0 for a new session).
func newSession(m *Manager, id, owner string, a *Agent, workspace string, mark uint64) *Session {
	s := &Session{
		ID: id, Owner: owner, Agent: a, Workspace: workspace, mgr: m,
		slot:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		approvals: make(map[string]chan string),
		always:    make(map[string]bool),
		ops:       make(map[string]*operation),
	}
	s.feed = m.feeds.New(id, s, mark)
	return s
}

// ReserveFailed is told by the feed that a block of update seqs could not be
// reserved: the update was not published, and the running turn ends as a storage
// failure (docs/protocol.md, "Storage failures"). Publishing runs on the turn's
// goroutine, the only one that may fail it.
func (s *Session) ReserveFailed(err error) {
	s.mu.Lock()
	t, closed := s.turn, s.closed
	s.mu.Unlock()
	if t != nil && !closed { // a closed session's turn is ending anyway (and shutdown publishes off it)
		t.failStorage(err)
	}
}

// setTurnLocked makes t the running turn (nil: none), and tells the feed; mu is
// held.
func (s *Session) setTurnLocked(t *runningTurn) {
	s.turn = t
	s.feed.SetBusy(t != nil)
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
	s.feed.Close() // no more attaches
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
	s.feed.End() // the cursors deliver up to here, then leave
}

// publish assigns the next seq to u and queues it for the replay log; once stored,
// the cursors of the attached subscribers deliver it (internal/feed). Nothing
// waits for a subscriber. A text chunk is encoded by the feed by hand.
func (s *Session) publish(u *Update) {
	if isChunk(u) {
		s.feed.PublishChunk(u.TurnID, u.Type, u.Text)
		return
	}
	s.feed.Publish(u)
}

// capableSubscribers returns the attached subscribers that declared form
// elicitation.
func (s *Session) capableSubscribers() []Subscriber {
	var out []Subscriber
	for _, sub := range s.feed.Subscribers() {
		if sub, ok := sub.(Subscriber); ok && sub.CanElicit() {
			out = append(out, sub)
		}
	}
	return out
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
