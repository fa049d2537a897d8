package session

// Locked runs fn under s's lock while s is still the live session of its id: the
// same *Session (the same live generation), not closed. It fails with the
// not-found error of a missing session otherwise, before fn runs. A close, a kill,
// a delete or a sibling eviction that comes after the check waits until fn returns,
// so what fn does is ordered before it. fn must not call back into s or m.
//
// This is the session side of the one commit step of file/attach and
// file/upload/commit (internal/rpc/commit.go).
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

// NotFoundError is the error of a session that does not exist or that the caller
// may not see, for a check made outside this package (the commit step's ownership).
func NotFoundError(id string) error { return errNotFound(id) }
