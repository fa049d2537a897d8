package session

import "github.com/zeroclaw-labs/zeroclaw-go/internal/store"

// Store returns the durable store the sessions live in; the upload index is kept
// there beside them.
func (m *Manager) Store() *store.Store { return m.st }

// Locked runs fn under s's lock while s is still the live session of its id: the
// same *Session (the same live generation), not closed. It fails with the
// not-found error of a missing session otherwise, before fn runs. A close, a kill,
// a delete or a sibling eviction that comes after the check waits until fn returns,
// so what fn does is ordered before it. fn must not call back into s or m.
//
// This is the session side of the one commit step of file/attach and
// file/upload/commit (internal/upload).
func (m *Manager) Locked(s *Session, fn func() error) error {
	m.mu.Lock()
	if m.sessions[s.ID] != s {
		m.mu.Unlock()
		return errNotFound(s.ID)
	}
	// Taken inside m.mu (the order New uses), so no close can slip between the
	// map check and the lock: Close removes s from the map under m.mu, then
	// shuts it down under s.mu, which waits for fn.
	s.mu.Lock()
	m.mu.Unlock()
	defer s.mu.Unlock()
	if s.closed {
		return errNotFound(s.ID)
	}
	return fn()
}
