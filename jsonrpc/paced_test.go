package jsonrpc

import (
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestPacedNotificationsTakeAWindowAndReportRoom: NotifyPaced takes notifications
// while less than PacedWindow bytes of them wait, refuses the next one without
// queuing it, and PacedRoom is ready once the writer wrote enough. Paced
// notifications leave the bounded queue of Notify alone.
func TestPacedNotificationsTakeAWindowAndReportRoom(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{OutboundFrames: 2})
	payload := jsontext.Value(`{"text":"` + strings.Repeat("x", 1000) + `"}`)
	sent := 0
	for {
		ok, err := c.NotifyPaced("session/update", payload)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		sent++
		if sent > 2*PacedWindow/len(payload) {
			t.Fatal("NotifyPaced never refused")
		}
	}
	if sent < PacedWindow/(len(payload)+64) || sent > PacedWindow/len(payload)+1 {
		t.Fatalf("%d paced notifications of %d bytes taken, want about a window of %d bytes", sent, len(payload), PacedWindow)
	}
	// The bounded queue is not theirs: two notifications still fit in it.
	for i := range 2 {
		if err := c.Notify("other", nil); err != nil {
			t.Fatalf("notification %d beside the paced ones: %v", i, err)
		}
	}
	room := c.PacedRoom()
	select {
	case <-room:
		t.Fatal("PacedRoom is ready while the window is full")
	default:
	}
	// The writer's batches: what it took before the gate, then the rest (tokens to
	// spare: how it batches depends on timing).
	for range 16 {
		f.gate <- struct{}{}
	}
	<-room
	if ok, err := c.NotifyPaced("session/update", jsontext.Value(`{"last":true}`)); !ok || err != nil {
		t.Fatalf("NotifyPaced after PacedRoom: %v, %v", ok, err)
	}
	f.gate <- struct{}{}
	f.waitWritten(sent + 3)
	got := f.written()
	if last := got[len(got)-1]; !strings.Contains(last, `"last":true`) {
		t.Fatalf("the last frame written is %.100s", last)
	}
	c.Close()
	if ok, err := c.NotifyPaced("session/update", payload); ok || err == nil {
		t.Fatalf("NotifyPaced after close: %v, %v", ok, err)
	}
	select {
	case <-c.PacedRoom():
	default:
		t.Fatal("PacedRoom is not ready after close")
	}
}

// TestAPacedBatchTakesWhatTheWindowHolds: NotifyPacedBatch queues, in order, as
// many notifications as the window takes and says how many; the rest go once the
// writer made room, and every frame leaves in order.
func TestAPacedBatchTakesWhatTheWindowHolds(t *testing.T) {
	c, f := runGated(t, HandlerFunc(nil), Options{})
	var batch []jsontext.Value
	for i := range 100 {
		batch = append(batch, jsontext.Value(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 1000))))
	}
	n, err := c.NotifyPacedBatch("session/update", batch)
	if err != nil || n == 0 || n >= len(batch) {
		t.Fatalf("a batch of %d frames of 1 KB into a window of %d: %d taken, %v", len(batch), PacedWindow, n, err)
	}
	if m, err := c.NotifyPacedBatch("session/update", batch[n:]); m != 0 || err != nil {
		t.Fatalf("into a full window: %d taken, %v", m, err)
	}
	for taken := n; taken < len(batch); {
		room := c.PacedRoom()
		// Tokens for the writer's next writes: how many it takes to free half the
		// window depends on how it batched what was queued (timing), so it is
		// never short of one while the test waits for room.
		for len(f.gate) < 4 {
			f.gate <- struct{}{}
		}
		<-room
		m, err := c.NotifyPacedBatch("session/update", batch[taken:])
		if err != nil {
			t.Fatal(err)
		}
		taken += m
	}
	for range 8 {
		f.gate <- struct{}{}
	}
	f.waitWritten(len(batch))
	for i, line := range f.written() {
		if !strings.Contains(line, fmt.Sprintf(`{"n":%d,`, i)) {
			t.Fatalf("frame %d is %.40s", i, line)
		}
	}
}

// NotifyPacedFrames writes borrowed NDJSON frames in their order among the other
// frames (frames laid out one after the other, merged into one write, included),
// takes at most a window of them, and refuses a framer that is not NDJSON.
func TestPacedFramesAreWrittenFromTheCallersMemoryInOrder(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{})
	var block []byte
	var frames [][]byte
	for i := range 5 { // one array, as the session's tail lays them out
		start := len(block)
		block = fmt.Appendf(block, `{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`+"\n", i)
		frames = append(frames, block[start:len(block)])
	}
	if cap(block) == len(block) {
		block = append(block, 0)[:len(block)] // room after the last: a merge must stop at it
	}
	alone := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"n":5}}` + "\n")
	if n, err := c.NotifyPacedFrames(frames[:3]); n != 3 || err != nil {
		t.Fatalf("NotifyPacedFrames = %d, %v", n, err)
	}
	if err := c.Notify("other", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := c.NotifyPacedFrames(append(frames[3:], alone)); n != 3 || err != nil {
		t.Fatalf("NotifyPacedFrames = %d, %v", n, err)
	}
	want := []string{"0", "1", "2", "other", "3", "4", "5"}
	for _, w := range want {
		m := readMsg(t, peer, r)
		if w == "other" {
			if m["method"] != "other" {
				t.Fatalf("got %v, want the notification queued between the frames", m)
			}
			continue
		}
		if p, _ := m["params"].(map[string]any); fmt.Sprint(p["n"]) != w {
			t.Fatalf("got %v, want frame %s", m, w)
		}
	}

	big := make([][]byte, 0, 2*PacedWindow/len(alone))
	for range cap(big) {
		big = append(big, alone)
	}
	n, err := c.NotifyPacedFrames(big)
	if err != nil || n == 0 || n >= len(big) || n*len(alone) > PacedWindow {
		t.Fatalf("NotifyPacedFrames of %d frames of %d bytes took %d (%v), want at most a window of %d bytes", len(big), len(alone), n, err, PacedWindow)
	}

	g, _ := runGated(t, HandlerFunc(nil), Options{})
	if n, err := g.NotifyPacedFrames(frames); n != 0 || !errors.Is(err, ErrNotNDJSON) {
		t.Fatalf("NotifyPacedFrames over another framer = %d, %v, want ErrNotNDJSON", n, err)
	}
}
