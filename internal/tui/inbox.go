package tui

import (
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// frameInterval is the shortest time between two flushes of the inbox: a stream is
// drawn at most 60 times a second.
const frameInterval = time.Second / 60

// inbox gathers the daemon's updates between frames. The client's callbacks push
// into it (never blocking, never dropping); at most once a frame it wakes the
// program with a flushMsg, and the model takes every update gathered so far. Any
// message the model handles takes them too, so the order is the daemon's.
type inbox struct {
	mu        sync.Mutex
	pending   []client.Update
	scheduled bool
	last      time.Time
	send      func(tea.Msg) // Program.Send; nil in model tests (they flush by hand)
}

// flushMsg wakes the model to take the gathered updates.
type flushMsg struct{}

func (b *inbox) push(u client.Update) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, u)
	if b.scheduled || b.send == nil {
		return
	}
	b.scheduled = true
	wait := frameInterval - time.Since(b.last)
	send := b.send
	if wait <= 0 {
		go send(flushMsg{})
		return
	}
	time.AfterFunc(wait, func() { send(flushMsg{}) })
}

// take returns the gathered updates, oldest first.
func (b *inbox) take() []client.Update {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending
	b.pending, b.scheduled, b.last = nil, false, time.Now()
	return p
}
