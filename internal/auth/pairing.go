package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/atomicfile"
)

// PairingsFile is the file in the data dir that holds the pairing hashes.
const PairingsFile = "pairings.json"

// TokenPrefix starts every pairing token, so that one pasted into the wrong place is
// recognizable (and greppable by secret scanners).
const TokenPrefix = "zc_"

// MaxPairings bounds how many tokens may be paired at once.
const MaxPairings = 256

// ErrTooManyPairings is returned by Create when MaxPairings tokens are paired.
var ErrTooManyPairings = fmt.Errorf("at most %d pairing tokens may exist; revoke some first", MaxPairings)

// Pairing is one paired token as listed: who it acts as, and since when. The token
// itself is never kept.
type Pairing struct {
	User      string    // "" for the operator
	CreatedAt time.Time // UTC, whole seconds
}

type record struct {
	Hash      string    `json:"hash"` // hex sha256 of the token
	User      string    `json:"user"` // "" for the operator
	CreatedAt time.Time `json:"createdAt"`
}

type file struct {
	Pairings []record `json:"pairings"`
}

// Pairings holds the pairing tokens (as hashes) in <data dir>/pairings.json, and the
// connections each token authenticated, so that revoking a token closes them.
type Pairings struct {
	path string // "" keeps the pairings in memory only
	now  func() time.Time

	// hold is read-locked by Hold and write-locked by Revoke, so a revocation waits
	// for an authorization that has been checked but not yet acted upon. It is
	// separate from mu so that Lookup, under Hold, never takes a read lock twice
	// (which deadlocks once a revocation waits).
	hold sync.RWMutex

	mu      sync.Mutex // guards records
	records []record

	connMu sync.Mutex
	conns  map[string]map[*tracked]struct{} // by hash
}

type tracked struct{ close func() }

// OpenPairings loads the pairings stored at path (a missing file means none).
// An empty path keeps them in memory only.
func OpenPairings(path string) (*Pairings, error) {
	p := &Pairings{path: path, now: time.Now, conns: make(map[string]map[*tracked]struct{})}
	if path == "" {
		return p, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pairings: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, r := range f.Pairings {
		if len(r.Hash) != sha256.Size*2 {
			return nil, fmt.Errorf("%s: a pairing has a malformed hash", path)
		}
	}
	p.records = f.Pairings
	return p, nil
}

// RemoveTemp removes the temporary file a pairing write interrupted by a crash left
// beside the pairings file. Call it only while no write can be running: the daemon
// does, at start, once it holds its endpoint's lock.
func (p *Pairings) RemoveTemp() (removed bool, err error) {
	if p.path == "" {
		return false, nil
	}
	return atomicfile.RemoveTemp(p.path)
}

// hashToken is the stored form of a token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Create mints a token that acts as user ("" for the operator), stores its hash, and
// returns the token: 32 random bytes, base64url, after TokenPrefix. The caller shows
// it once; it cannot be recovered.
func (p *Pairings) Create(user string) (string, error) {
	var b [32]byte
	rand.Read(b[:])
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.records) >= MaxPairings {
		return "", ErrTooManyPairings
	}
	next := append(slices.Clip(p.records), record{
		Hash: hashToken(token), User: user, CreatedAt: p.now().UTC().Truncate(time.Second),
	})
	if err := p.save(next); err != nil {
		return "", err
	}
	p.records = next
	return token, nil
}

// List returns the pairings, oldest first.
func (p *Pairings) List() []Pairing {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Pairing, len(p.records))
	for i, r := range p.records {
		out[i] = Pairing{User: r.User, CreatedAt: r.CreatedAt}
	}
	return out
}

// Verify checks a presented token and returns its hash, the credential to keep.
// Every stored hash is compared in constant time, and all of them are compared.
func (p *Pairings) Verify(token string) (hash string, ok bool) {
	if p == nil || !strings.HasPrefix(token, TokenPrefix) {
		return "", false
	}
	h := hashToken(token)
	p.mu.Lock()
	defer p.mu.Unlock()
	found := 0
	for _, r := range p.records {
		found |= subtle.ConstantTimeCompare([]byte(r.Hash), []byte(h))
	}
	return h, found == 1
}

// Lookup returns the user a paired hash acts as ("" for the operator).
func (p *Pairings) Lookup(hash string) (user string, ok bool) {
	if p == nil {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.records {
		if subtle.ConstantTimeCompare([]byte(r.Hash), []byte(hash)) == 1 {
			return r.User, true
		}
	}
	return "", false
}

// Hold keeps the set of paired tokens as it is until release is called: a
// revocation waits. An authorization that must still hold when its action completes
// (a config write, an upload's commit) is checked and acted upon under Hold.
func (p *Pairings) Hold() (release func()) {
	if p == nil {
		return func() {}
	}
	p.hold.RLock()
	return p.hold.RUnlock
}

// Revoke removes every token of user ("" for the operator's), then closes the
// connections they authenticated. It reports whether there was any.
func (p *Pairings) Revoke(user string) (bool, error) {
	p.hold.Lock()
	p.mu.Lock()
	var keep []record
	var gone []string
	for _, r := range p.records {
		if r.User == user {
			gone = append(gone, r.Hash)
		} else {
			keep = append(keep, r)
		}
	}
	if len(gone) == 0 {
		p.mu.Unlock()
		p.hold.Unlock()
		return false, nil
	}
	if err := p.save(keep); err != nil {
		p.mu.Unlock()
		p.hold.Unlock()
		return false, err
	}
	p.records = keep
	// Collected under mu: a connection that Tracks after this point finds its hash
	// gone and is refused, so none escapes.
	var closers []func()
	p.connMu.Lock()
	for _, h := range gone {
		for t := range p.conns[h] {
			closers = append(closers, t.close)
		}
		delete(p.conns, h)
	}
	p.connMu.Unlock()
	p.mu.Unlock()
	p.hold.Unlock()
	// Outside the locks: closing a connection may wait for its calls, and those
	// may be waiting for Hold.
	for _, c := range closers {
		c()
	}
	return true, nil
}

// Track registers a connection authenticated by the token with this hash, so that
// revoking the token calls close. It returns false (and registers nothing) when the
// hash is no longer paired. untrack removes the registration when the connection ends.
func (p *Pairings) Track(hash string, close func()) (untrack func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.ContainsFunc(p.records, func(r record) bool { return r.Hash == hash }) {
		return nil, false
	}
	t := &tracked{close: close}
	p.connMu.Lock()
	if p.conns[hash] == nil {
		p.conns[hash] = make(map[*tracked]struct{})
	}
	p.conns[hash][t] = struct{}{}
	p.connMu.Unlock()
	return func() {
		p.connMu.Lock()
		delete(p.conns[hash], t)
		if len(p.conns[hash]) == 0 {
			delete(p.conns, hash)
		}
		p.connMu.Unlock()
	}, true
}

// Tracked returns how many connections are registered for the tokens of user
// (pairing/list reports it).
func (p *Pairings) Tracked(user string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connMu.Lock()
	defer p.connMu.Unlock()
	n := 0
	for _, r := range p.records {
		if r.User == user {
			n += len(p.conns[r.Hash])
		}
	}
	return n
}

// save writes records to the file (0600, atomically). Called with mu held.
func (p *Pairings) save(records []record) error {
	if p.path == "" {
		return nil
	}
	if records == nil {
		records = []record{}
	}
	data, err := json.Marshal(file{Pairings: records})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.Write(data)
	buf.WriteByte('\n')
	return atomicfile.Write(p.path, buf.Bytes(), 0o600)
}
