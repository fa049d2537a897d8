package auth

import (
	"errors"
	"testing"
)

func TestLocalPrincipal(t *testing.T) {
	const daemon = 1000
	for _, tt := range []struct {
		peer int
		want Principal
		err  error
	}{
		{daemon, Principal{ID: "operator", Admin: true}, nil},
		{-1, Principal{ID: "operator", Admin: true}, nil}, // pipe or no peer credentials
		{0, Principal{}, ErrUnknownPeer},
		{1001, Principal{}, ErrUnknownPeer},
	} {
		got, err := LocalPrincipal(tt.peer, daemon)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("LocalPrincipal(%d) = %+v, %v; want %+v, %v", tt.peer, got, err, tt.want, tt.err)
		}
	}
}
