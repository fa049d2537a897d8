package web

import (
	"bytes"
	"testing"
)

// The outbox keeps order, bounds its bytes (one frame always fits), and hands out
// what it holds after close.
func TestTheOutboxIsABoundedFIFO(t *testing.T) {
	o := newOutbox()
	big := bytes.Repeat([]byte("x"), outboxBytes)
	if !o.push(big) {
		t.Fatal("a frame the size of the whole outbox does not fit an empty one")
	}
	waiting := make(chan struct{}, 1)
	o.waiting = waiting
	pushed := make(chan bool, 1)
	go func() { pushed <- o.push([]byte("next")) }()
	select {
	case ok := <-pushed:
		t.Fatalf("a push into a full outbox did not wait (it returned %v)", ok)
	case <-waiting:
	}
	// The push is waiting on the outbox's lock-held condition: only a pop can let it
	// go on, so it cannot have returned.
	select {
	case <-pushed:
		t.Fatal("a push into a full outbox returned before any pop")
	default:
	}
	if f, ok := o.pop(); !ok || len(f) != outboxBytes {
		t.Fatalf("pop = %d bytes, %v", len(f), ok)
	}
	if !<-pushed {
		t.Fatal("the waiting push failed once there was room")
	}
	o.push([]byte("last"))
	o.close()
	if o.push([]byte("after")) {
		t.Fatal("a push after close succeeded")
	}
	for _, want := range []string{"next", "last"} {
		if f, ok := o.pop(); !ok || string(f) != want {
			t.Fatalf("pop after close = %q %v, want %q", f, ok, want)
		}
	}
	if _, ok := o.pop(); ok {
		t.Fatal("pop of an empty closed outbox succeeded")
	}
}
