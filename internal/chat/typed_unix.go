//go:build unix

package chat

import (
	"bytes"
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// watchTyped reads the lines typed while a turn streams, until ctx ends, and hands
// each to onLine as typed (spaces and Tabs kept). Between prompts the terminal is in its ordinary (canonical) mode, so
// stdin becomes readable only when a whole line was entered. The loop polls instead of
// blocking in read, so that when the turn ends no read is left waiting to steal the
// next prompt's input; and it reads only while holding the terminal, so an approval
// question asked meanwhile gets its own answer.
func (ch *chat) watchTyped(ctx context.Context, onLine func(string)) {
	fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
	buf := make([]byte, 4096)
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, 100)
		if err != nil && err != unix.EINTR {
			return
		}
		if n <= 0 || fds[0].Revents&unix.POLLIN == 0 {
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
			continue
		}
		if !ch.term.TryLock() { // a question is being asked: the input is its answer
			time.Sleep(50 * time.Millisecond)
			continue
		}
		// Readable before the lock may be consumed by now: look again without waiting.
		if k, _ := unix.Poll(fds, 0); k <= 0 || fds[0].Revents&unix.POLLIN == 0 || ctx.Err() != nil {
			ch.term.Unlock()
			continue
		}
		m, err := unix.Read(0, buf)
		ch.term.Unlock()
		if err != nil || m <= 0 {
			return
		}
		for _, line := range bytes.Split(bytes.TrimRight(buf[:m], "\r\n"), []byte("\n")) {
			onLine(string(bytes.TrimRight(line, "\r"))) // as typed: a Tab at its end queues it
		}
	}
}
