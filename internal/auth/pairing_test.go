package auth

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCreateStoresOnlyAHashInA0600File(t *testing.T) {
	path := filepath.Join(t.TempDir(), PairingsFile)
	ps, err := OpenPairings(path)
	if err != nil {
		t.Fatal(err)
	}
	ps.now = func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 500, time.UTC) }
	token, err := ps.Create("alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, "zc_") || len(token) != 3+43 {
		t.Errorf("token %q: want zc_ and 43 base64url characters", token)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), token) || strings.Contains(string(data), strings.TrimPrefix(token, "zc_")) {
		t.Fatalf("the file holds the token: %s", data)
	}
	if !strings.Contains(string(data), hashToken(token)) || !strings.Contains(string(data), `"user":"alice"`) {
		t.Errorf("the file lacks the hash or the user: %s", data)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}

	// A new Pairings (a restarted daemon) reads it back.
	again, err := OpenPairings(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Verify(token); !ok {
		t.Error("the token does not verify after a reload")
	}
	list := again.List()
	if len(list) != 1 || list[0].User != "alice" || !list[0].CreatedAt.Equal(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("List = %+v", list)
	}
}

func TestVerifyRefusesUnknownTokens(t *testing.T) {
	ps, _ := OpenPairings("")
	token, _ := ps.Create("")
	for _, bad := range []string{"", "zc_", token + "x", strings.TrimPrefix(token, "zc_"), hashToken(token)} {
		if _, ok := ps.Verify(bad); ok {
			t.Errorf("Verify(%q) succeeded", bad)
		}
	}
	var none *Pairings
	if _, ok := none.Verify(token); ok {
		t.Error("a nil Pairings verified a token")
	}
}

func TestRevokeRemovesEveryTokenOfTheUserAndClosesTheirConnections(t *testing.T) {
	path := filepath.Join(t.TempDir(), PairingsFile)
	ps, _ := OpenPairings(path)
	a1, _ := ps.Create("alice")
	a2, _ := ps.Create("alice")
	b, _ := ps.Create("bob")
	op, _ := ps.Create("")

	var closed atomic.Int32
	track := func(token string) func() {
		h, ok := ps.Verify(token)
		if !ok {
			t.Fatalf("Verify(%s)", token)
		}
		untrack, ok := ps.Track(h, func() { closed.Add(1) })
		if !ok {
			t.Fatal("Track refused a paired token")
		}
		return untrack
	}
	track(a1)
	track(a1)
	track(a2)
	track(b)
	untrackOp := track(op)
	untrackOp() // a connection that ended is not closed again
	if n := ps.Tracked("alice"); n != 3 {
		t.Fatalf("Tracked(alice) = %d, want 3", n)
	}

	revoked, err := ps.Revoke("alice")
	if err != nil || !revoked {
		t.Fatalf("Revoke = %v, %v", revoked, err)
	}
	if closed.Load() != 3 {
		t.Errorf("%d connections closed, want alice's 3", closed.Load())
	}
	for _, tok := range []string{a1, a2} {
		if _, ok := ps.Verify(tok); ok {
			t.Error("a revoked token still verifies")
		}
	}
	if _, ok := ps.Verify(b); !ok {
		t.Error("bob's token was revoked with alice's")
	}
	if ps.Tracked("alice") != 0 || ps.Tracked("bob") != 1 {
		t.Errorf("registry after revoke: alice %d, bob %d", ps.Tracked("alice"), ps.Tracked("bob"))
	}
	// Tracking a revoked token is refused, so a connection racing the revocation
	// cannot slip past it.
	if _, ok := ps.Track(hashToken(a1), func() {}); ok {
		t.Error("Track accepted a revoked token")
	}
	if again, _ := ps.Revoke("alice"); again {
		t.Error("a second revoke reported tokens")
	}
	reloaded, _ := OpenPairings(path)
	if len(reloaded.List()) != 2 {
		t.Errorf("file after revoke holds %+v", reloaded.List())
	}
}

func TestRevokeWaitsForHold(t *testing.T) {
	ps, _ := OpenPairings("")
	ps.Create("alice")
	release := ps.Hold()
	done := make(chan struct{})
	go func() {
		ps.Revoke("alice")
		close(done)
	}()
	waitForPendingRevocation(t, ps)
	select {
	case <-done:
		t.Fatal("Revoke did not wait for Hold")
	default:
	}
	if len(ps.List()) != 1 {
		t.Fatal("the revocation landed while held")
	}
	release()
	<-done
	if len(ps.List()) != 0 {
		t.Fatal("the revocation did not land after release")
	}
}

func TestFailedSaveChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, PairingsFile)
	ps, _ := OpenPairings(path)
	tok, _ := ps.Create("alice")
	os.Mkdir(path+".tmp", 0o700) // the temporary file cannot be created, even by root
	if _, err := ps.Create("bob"); err == nil {
		t.Error("Create succeeded without saving")
	}
	if ok, err := ps.Revoke("alice"); err == nil || ok {
		t.Errorf("Revoke = %v, %v without saving", ok, err)
	}
	if _, ok := ps.Verify(tok); !ok || len(ps.List()) != 1 {
		t.Errorf("state changed by failed saves: %+v", ps.List())
	}
}

func TestMalformedFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), PairingsFile)
	os.WriteFile(path, []byte(`{"pairings":[{"hash":"short","user":""}]}`), 0o600)
	if _, err := OpenPairings(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want one naming %s", err, path)
	}
}

// Resolving a token under Hold must not deadlock while a revocation waits for Hold.
func TestLookupUnderHoldWhileARevocationWaits(t *testing.T) {
	ps, _ := OpenPairings("")
	tok, _ := ps.Create("alice")
	h, _ := ps.Verify(tok)
	release := ps.Hold()
	revoked := make(chan struct{})
	go func() {
		ps.Revoke("alice")
		close(revoked)
	}()
	waitForPendingRevocation(t, ps)
	looked := make(chan bool)
	go func() {
		_, ok := ps.Lookup(h)
		looked <- ok
	}()
	select {
	case ok := <-looked:
		if !ok {
			t.Error("the token was revoked while held")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lookup under Hold deadlocked behind a waiting revocation")
	}
	release()
	<-revoked
	if _, ok := ps.Lookup(h); ok {
		t.Error("the revocation did not land after release")
	}
}

// waitForPendingRevocation returns once a revocation waits for Hold. A writer waiting
// for an RWMutex turns new readers away, so TryRLock failing while this test holds
// the read lock is the sign that the revoker is blocked in Revoke.
func waitForPendingRevocation(t *testing.T, ps *Pairings) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ps.hold.TryRLock(); runtime.Gosched() {
		ps.hold.RUnlock()
		if time.Now().After(deadline) {
			t.Fatal("the revocation never started waiting for Hold")
		}
	}
}
