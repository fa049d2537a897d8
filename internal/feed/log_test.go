package feed

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestUpdateLogFlushStoresEverythingAddedBefore is what replay on attach relies on:
// after flush, every update added before it can be read back.
func TestUpdateLogFlushStoresEverythingAddedBefore(t *testing.T) {
	st, err := store.Open(t.TempDir()+"/s.db", store.Options{Keep: 4 * updateQueue})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.CreateSession(ctx, store.Session{ID: "s", Owner: "operator", Agent: "default", Workspace: "/w"}); err != nil {
		t.Fatal(err)
	}
	w := newUpdateLog(ctx, st, slog.New(slog.DiscardHandler))
	const n = 2*updateQueue + 1 // more than the queue holds (adding waits for the writer), fewer than the store keeps
	for i := 1; i <= n; i++ {
		w.add(nil, store.Update{SessionID: "s", Seq: uint64(i), Payload: []byte(fmt.Sprintf(`{"seq":%d}`, i))}, false)
	}
	w.flush()
	var got uint64
	if _, err := st.Updates(ctx, "s", 0, func(u store.Update) error {
		got++
		if u.Seq != got {
			return fmt.Errorf("seq %d at position %d", u.Seq, got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("%d updates stored after flush, want %d", got, n)
	}
	w.add(nil, store.Update{SessionID: "s", Seq: n + 1, Payload: []byte(`{}`)}, false)
	w.close() // stores what is queued
	if _, err := st.Updates(ctx, "s", n, func(store.Update) error { got++; return nil }); err != nil || got != n+1 {
		t.Fatalf("after close: %d stored, %v", got, err)
	}
}
