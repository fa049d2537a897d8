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
	rule   func(req map[string]any) error // what the server refuses in any mode (SetRule)
	mu     sync.Mutex
	reqs   []map[string]any
	script []A
	// answered counts the requests answered from the script (refused ones are not).
	answered int
	refused  int
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

// SetRule makes Take refuse, strict or not, a request that rule finds fault with: a
// check a real server always makes (Mistral's rule for tool-call ids). The rule
// runs before strict mode's check.
func (s *Script[A]) SetRule(rule func(req map[string]any) error) {
	s.mu.Lock()
	s.rule = rule
	s.mu.Unlock()
}

// Take reads and records one request, and returns it with its answer; refusal is
// why the rule or strict mode refuses it (nil when neither does), and then it
// takes no answer from the script.
func (s *Script[A]) Take(r *http.Request) (req map[string]any, a A, refusal error) {
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if s.rule != nil {
		refusal = s.rule(req)
	}
	if refusal == nil && s.strict {
		refusal = s.check(req)
	}
	if refusal == nil {
		a = s.script[min(s.answered, len(s.script)-1)]
		s.answered++
	} else {
		s.refused++
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return req, a, refusal
}

// Refused is how many requests the rule or strict mode refused so far.
func (s *Script[A]) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Check runs strict mode's check (and the rule) on req, as Take would.
func (s *Script[A]) Check(req map[string]any) error {
	s.mu.Lock()
	rule := s.rule
	s.mu.Unlock()
	if rule != nil {
		if err := rule(req); err != nil {
			return err
		}
	}
	return s.check(req)
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
