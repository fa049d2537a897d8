//go:build linux

package endpoint

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestPeerOfReportsPidAndUid(t *testing.T) {
	l := listen(t, filepath.Join(shortDir(t), "d.sock"))
	c, err := Dial(context.Background(), l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	want := Peer{Label: fmt.Sprintf("unix:pid=%d,uid=%d", os.Getpid(), os.Getuid()), UID: os.Getuid(), PID: os.Getpid()}
	for name, conn := range map[string]net.Conn{"server side": s, "client side": c} {
		if got := PeerOf(conn); got != want {
			t.Errorf("%s: PeerOf = %+v, want %+v", name, got, want)
		}
	}
}

func TestPeerOfNonSocketIsUnknown(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	want := Peer{Label: "unix:unknown", UID: -1, PID: -1}
	if got := PeerOf(a); got != want {
		t.Errorf("PeerOf(net.Pipe) = %+v, want %+v", got, want)
	}
}
