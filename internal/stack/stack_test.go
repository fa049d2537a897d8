package stack

import (
	"testing"
	"unsafe"
)

// moves reports whether a goroutine's stack moved (was grown, and so copied)
// during a call that needs 40 KiB of it, after reserve ran on that goroutine.
func moves(reserve func()) bool {
	moved := make(chan bool)
	go func() {
		reserve()
		var local byte
		before := uintptr(unsafe.Pointer(&local))
		deep(40)
		moved <- uintptr(unsafe.Pointer(&local)) != before
	}()
	return <-moved
}

// deep takes n frames of 1 KiB.
//
//go:noinline
func deep(n int) {
	var frame [1 << 10]byte
	_ = touch(frame[:])
	if n > 1 {
		deep(n - 1)
	}
}

func TestAReservedStackIsNotGrownByADeepCall(t *testing.T) {
	if !moves(func() {}) {
		t.Fatal("the stack of a goroutine that reserved nothing did not move: the test cannot tell")
	}
	if moves(Reserve) {
		t.Fatal("the stack moved after Reserve: it did not grow it enough")
	}
}

func TestReserveKeepsItsFrameOnTheStack(t *testing.T) {
	if n := testing.AllocsPerRun(100, Reserve); n != 0 {
		t.Fatalf("Reserve allocated %v times a call: its frame went to the heap", n)
	}
}
