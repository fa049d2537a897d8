package config

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/pelletier/go-toml/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/atomicfile"
)

// MaxEntries bounds one write (config/set-many takes 1 to 256 entries).
const MaxEntries = 256

// Entry is one property to set, its value as JSON.
type Entry struct {
	Prop  string
	Value jsontext.Value
}

// Views prepares what the daemon derives from a configuration (its provider and
// agent views) from a complete candidate, before anything is written: an error
// refuses the write. The returned install runs after the commit, under the write
// lock, and must not fail.
type Views func(candidate Config) (install func(), err error)

// LiveOptions configure a Live.
type LiveOptions struct {
	// Dir is the config dir, where config.toml is written. Empty keeps the
	// configuration in memory only (tests, and servers built without a config dir).
	Dir    string
	Views  Views        // nil: nothing derived
	Logger *slog.Logger // nil: slog.Default()
}

// Live is the daemon's configuration while it runs: an immutable snapshot read
// without locks, and the config write lock that serializes every change. Every write
// (config/set and config/set-many) goes through Tx.Commit, the one staging step.
// WaitingMessage is the log message of a config write waiting for the write lock.
const WaitingMessage = "a config write waits for the write lock"

type Live struct {
	opts    LiveOptions
	cur     atomic.Pointer[Config]
	lock    chan struct{} // the write lock: a token in the channel means free
	waiting atomic.Int32
}

// NewLive returns a Live serving cfg, which should come from Load. With a Dir, the
// temporary file a config write interrupted by a crash left there is removed
// (docs/protocol.md, "Storage failures"): the daemon builds its Live once, holding
// its endpoint's lock, so no write can be running.
func NewLive(cfg Config, opts LiveOptions) *Live {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Dir != "" {
		removed, err := atomicfile.RemoveTemp(filepath.Join(opts.Dir, FileName))
		switch {
		case err != nil:
			opts.Logger.Warn("a config write interrupted earlier left a temporary file that cannot be removed", "err", err)
		case removed:
			opts.Logger.Info("removed the temporary file of a config write interrupted earlier", "file", FileName+atomicfile.TempSuffix)
		}
	}
	l := &Live{opts: opts, lock: make(chan struct{}, 1)}
	l.cur.Store(&cfg)
	l.lock <- struct{}{}
	return l
}

// Current returns the live configuration. It is shared: do not change it.
func (l *Live) Current() Config { return *l.cur.Load() }

// Tx holds the config write lock. Between Begin and End the live configuration
// changes only through this Tx, so what the holder decides from Current (who may
// write what) still holds when it commits.
type Tx struct {
	l    *Live
	done bool
}

// Begin takes the write lock, waiting at most until ctx ends. A write that has to
// wait says so in the log, with how many wait, so a write stuck behind a slow one
// (an upload landing holds the lock too) shows where it is.
func (l *Live) Begin(ctx context.Context) (*Tx, error) {
	select {
	case <-l.lock:
		return &Tx{l: l}, nil
	default:
	}
	n := l.waiting.Add(1)
	defer l.waiting.Add(-1)
	l.opts.Logger.Info(WaitingMessage, "waiting", n)
	select {
	case <-l.lock:
		return &Tx{l: l}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// End releases the write lock. It is safe to call more than once.
func (t *Tx) End() {
	if !t.done {
		t.done = true
		t.l.lock <- struct{}{}
	}
}

// Current returns the live configuration, stable until End.
func (t *Tx) Current() Config { return t.l.Current() }

// EntryError is a write refused because of one entry: Index is its zero-based
// position in the request, or -1 when the whole candidate is at fault and no entry
// can be named. Err is a *PropError or a *ValidationError.
type EntryError struct {
	Index int
	Prop  string
	Err   error
}

func (e *EntryError) Error() string { return e.Err.Error() }
func (e *EntryError) Unwrap() error { return e.Err }

// CommitError is a valid candidate that could not be written. Err says why, for
// the log; clients get no more than that the write failed.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "committing the config: " + e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// Commit is the one staging step: it copies the live configuration, stages every
// entry on the copy in order (a later entry for the same property wins), validates
// the complete candidate, prepares its views, writes config.toml atomically (temp
// file in the same dir, fsync, rename, fsync the dir, mode 0600), swaps the live
// configuration, and installs the views. Any failure leaves the file and the live
// configuration as they were.
//
// The file holds the whole configuration, and what goes live is the file read back
// over the defaults, exactly what Load will return at the next start.
func (t *Tx) Commit(entries []Entry) error {
	if t.done {
		return errors.New("config: Commit after End")
	}
	if len(entries) == 0 || len(entries) > MaxEntries {
		return fmt.Errorf("config: a write takes 1 to %d entries, not %d", MaxEntries, len(entries))
	}
	cand := t.Current().Clone()
	for i, e := range entries {
		if err := cand.Set(e.Prop, e.Value); err != nil {
			return &EntryError{Index: i, Prop: e.Prop, Err: err}
		}
	}
	body, err := toml.Marshal(cand)
	if err != nil {
		return &CommitError{Err: fmt.Errorf("encoding: %w", err)}
	}
	data := append([]byte(fileHeader), body...)
	next, err := parse(data)
	if err != nil { // the encoder and decoder disagree: a bug, not the client's fault
		return &CommitError{Err: fmt.Errorf("reading back what would be written: %w", err)}
	}
	if err := next.Validate(); err != nil {
		return blame(entries, err)
	}
	install := func() {}
	if t.l.opts.Views != nil {
		if install, err = t.l.opts.Views(next); err != nil {
			return blame(entries, &ValidationError{Key: leadingKey(err.Error()), Msg: err.Error()})
		}
	}
	if dir := t.l.opts.Dir; dir != "" {
		if err := atomicfile.Write(filepath.Join(dir, FileName), data, 0o600); err != nil {
			return &CommitError{Err: err}
		}
	}
	t.l.cur.Store(&next)
	install()
	return nil
}

// fileHeader opens every file the daemon writes.
const fileHeader = "# Written by the zeroclaw daemon (config/set): every write replaces this\n" +
	"# file with the whole configuration; comments are not kept.\n\n"

// blame names the entry a validation error comes from: the latest entry whose
// property shares the longest leading run of path segments with a key at fault
// ("users.example.uid" for "users.example.uid", "agents.x.model" for a missing
// "agents.x.provider"). Index -1 when no entry shares even the section.
func blame(entries []Entry, err error) error {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return &EntryError{Index: -1, Err: err}
	}
	best, score := -1, 0
	for i, e := range entries {
		for _, k := range ve.Keys() {
			if s := sharedSegments(e.Prop, k); s > 0 && s >= score {
				best, score = i, s
			}
		}
	}
	ee := &EntryError{Index: best, Err: ve}
	if best >= 0 {
		ee.Prop = entries[best].Prop
	}
	return ee
}

func sharedSegments(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	n := 0
	for n < len(as) && n < len(bs) && as[n] == bs[n] {
		n++
	}
	return n
}

var keyPrefix = regexp.MustCompile(`^[a-z_]+(\.[A-Za-z0-9_-]+)+`)

// leadingKey is the property a views error starts with ("agents.x.tools: …").
func leadingKey(msg string) string { return keyPrefix.FindString(msg) }
