package jsonrpc

import (
	"encoding/json/jsontext"
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
	for range 4 { // the writer's batches: what it took before the gate, then the rest
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
