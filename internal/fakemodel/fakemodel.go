// Package fakemodel is what the fake model servers of the tests (fakeopenai,
// fakeanthropic) share: a script of answers given in order, the record of every
// request, waiting for the n-th one, and the strict mode that refuses a context
// whose roles do not alternate. Each fake adds its own wire format. It serves tests
// only.
package fakemodel

import (
	"encoding/json/v2"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Script answers requests with its answers in order; the last one repeats.
type Script[A any] struct {
	name   string                         // the fake's name, for failures
	check  func(req map[string]any) error // what strict mode refuses
	mu     sync.Mutex
	reqs   []map[string]any
	script []A
	// answered counts the requests answered from the script (refused ones are not).
	answered int
	strict   bool
	changed  chan struct{} // closed and replaced when a request arrives
}

// NewScript returns a script of answers for the fake called name; check is what
// strict mode refuses a request for.
func NewScript[A any](name string, check func(req map[string]any) error, answers ...A) *Script[A] {
	return &Script[A]{name: name, check: check, script: answers, changed: make(chan struct{})}
}

// SetStrict makes Take refuse a request that check finds fault with.
func (s *Script[A]) SetStrict() {
	s.mu.Lock()
	s.strict = true
	s.mu.Unlock()
}

// Take reads and records one request, and returns it with its answer; refused says
// that strict mode refuses it, and then it takes no answer from the script.
func (s *Script[A]) Take(r *http.Request) (req map[string]any, a A, refused bool) {
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	refused = s.strict && s.check(req) != nil
	if !refused {
		a = s.script[min(s.answered, len(s.script)-1)]
		s.answered++
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return req, a, refused
}

// Request returns the n-th request received (from 0), waiting up to 30 s for it.
func (s *Script[A]) Request(t testing.TB, n int) map[string]any {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		if n < len(s.reqs) {
			r := s.reqs[n]
			s.mu.Unlock()
			return r
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("%s: request %d never arrived", s.name, n)
		}
	}
}

// Count is how many requests arrived so far.
func (s *Script[A]) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Messages returns a request's messages.
func Messages(req map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := req["messages"].([]any)
	for _, m := range list {
		mm, _ := m.(map[string]any)
		out = append(out, mm)
	}
	return out
}
