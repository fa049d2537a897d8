package config

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func entries(kv ...string) []Entry {
	var out []Entry
	for i := 0; i < len(kv); i += 2 {
		out = append(out, Entry{Prop: kv[i], Value: jsontext.Value(kv[i+1])})
	}
	return out
}

func TestCommitWritesAFileThatLoadsToTheLiveConfig(t *testing.T) {
	dir := t.TempDir()
	l := NewLive(Default(), LiveOptions{Dir: dir})
	err := l.Apply(context.Background(), entries(
		"permission_profiles.operator.grants", `["config:read","config:update"]`,
		"permission_profiles.operator.config_write_paths", `["users.*"]`,
		"users.example.uid", `1001`,
		"users.example.permission_profiles", `["operator"]`,
		"providers.remote.kind", `"openai"`,
		"providers.remote.api_key", `"sk-secret"`,
		"agents.default.autonomy", `""`, // unset: back to the default
		"agents.default.tools", `[]`,
		"security.trust_daemon_uid", `false`,
		"wss.allowed_origins", `["https://app.example.com"]`,
	))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("config.toml mode %v, want 0600", fi.Mode().Perm())
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded, l.Current()) {
		t.Fatalf("Load = %s\nlive = %s", loaded.MaskedJSON(), l.Current().MaskedJSON())
	}
	if loaded.Security.TrustDaemonUID || *loaded.Users["example"].UID != 1001 || loaded.Providers["remote"].APIKey != "sk-secret" {
		t.Errorf("loaded = %s", loaded.MaskedJSON())
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Error("temporary file left behind")
	}
}

func TestLaterEntriesForTheSamePropertyWin(t *testing.T) {
	l := NewLive(Default(), LiveOptions{})
	if err := l.Apply(context.Background(), entries("agents.default.model", `"a"`, "agents.default.model", `"b"`)); err != nil {
		t.Fatal(err)
	}
	if m := l.Current().Agents["default"].Model; m != "b" {
		t.Fatalf("model = %q", m)
	}
}

func TestFailuresLeaveFileAndLiveConfigUnchanged(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []Entry
		setup   func(dir string)
		index   int // -2: a CommitError
		reason  string
	}{
		{"unknown property at 2", entries("agents.default.model", `"x"`, "users.a.uid", `5`, "users.a.nope", `1`), nil, 2, ReasonUnknownProperty},
		{"bad value at 2", entries("agents.default.model", `"x"`, "users.a.uid", `5`, "rpc.max_local_connections", `"many"`), nil, 2, ReasonInvalidValue},
		{"invalid candidate blamed on 2", entries("agents.default.model", `"x"`, "users.a.uid", `5`, "users.a.permission_profiles", `["nope"]`), nil, 2, ""},
		{"out of range at 1", entries("agents.default.model", `"x"`, "rpc.max_local_connections", `0`), nil, 1, ""},
		{"missing provider blamed on the entry that made the agent", entries("agents.fresh.model", `"m"`, "rpc.replay_events", `5`), nil, 0, ""},
		{"duplicate uid", entries("agents.default.model", `"x"`, "users.b.uid", `1000`), nil, 1, ""},
		{"views refuse", entries("agents.default.model", `"x"`, "agents.default.system_prompt", `"refuse me"`), nil, 1, ""},
		{"commit fails", entries("agents.default.model", `"x"`), func(dir string) {
			// A directory where the temporary file must go: fails even for root.
			os.Mkdir(filepath.Join(dir, FileName+".tmp"), 0o700)
		}, -2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			installed := 0
			views := func(c Config) (func(), error) {
				if c.Agents["default"].SystemPrompt == "refuse me" {
					return nil, errors.New("agents.default.system_prompt: refused by the views")
				}
				return func() { installed++ }, nil
			}
			l := NewLive(Default(), LiveOptions{Dir: dir, Views: views})
			if err := l.Apply(context.Background(), entries("users.a.uid", `1000`)); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(dir, FileName))
			live := l.Current()
			if tt.setup != nil {
				tt.setup(dir)
			}
			err := l.Apply(context.Background(), tt.entries)
			var ee *EntryError
			var ce *CommitError
			switch {
			case tt.index == -2:
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a CommitError", err)
				}
			case !errors.As(err, &ee) || ee.Index != tt.index:
				t.Fatalf("err = %#v (%v), want index %d", err, err, tt.index)
			case tt.reason != "":
				var pe *PropError
				if !errors.As(err, &pe) || pe.Reason != tt.reason {
					t.Fatalf("err = %v, want reason %s", err, tt.reason)
				}
			}
			after, _ := os.ReadFile(filepath.Join(dir, FileName))
			if string(after) != string(before) {
				t.Errorf("file changed:\n%s\n---\n%s", before, after)
			}
			if !reflect.DeepEqual(l.Current(), live) {
				t.Error("live config changed")
			}
			if installed != 1 {
				t.Errorf("views installed %d times, want only by the first write", installed)
			}
		})
	}
}

func TestViewsArePreparedFromTheCandidateAndInstalledAfterTheCommit(t *testing.T) {
	dir := t.TempDir()
	var l *Live
	var order []string
	l = NewLive(Default(), LiveOptions{Dir: dir, Views: func(c Config) (func(), error) {
		if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
			order = append(order, "prepared after the write")
		}
		order = append(order, "prepare "+c.Agents["default"].Model)
		return func() {
			if l.Current().Agents["default"].Model != c.Agents["default"].Model {
				order = append(order, "installed before the swap")
			}
			order = append(order, "install")
		}, nil
	}})
	if err := l.Apply(context.Background(), entries("agents.default.model", `"m"`)); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "prepare m,install" {
		t.Fatalf("order = %v", order)
	}
}

func TestBeginWaitsForTheLockOrTheContext(t *testing.T) {
	waits := make(chan string, 1)
	l := NewLive(Default(), LiveOptions{Logger: slog.New(messageHandler(waits))})
	tx, err := l.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := l.Begin(ctx)
		done <- err
	}()
	if msg := <-waits; msg != WaitingMessage { // the second Begin waits, and says so
		t.Fatalf("logged %q", msg)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin = %v", err)
	}
	tx.End()
	tx.End() // harmless
	tx2, err := l.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tx2.End()
}

// Concurrent writers are serialized: none is lost, and every file on disk is some
// prefix of a serial order.
func TestConcurrentWritesAreSerialized(t *testing.T) {
	dir := t.TempDir()
	l := NewLive(Default(), LiveOptions{Dir: dir})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.Apply(context.Background(), entries(
				fmt.Sprintf("users.u%d.uid", i), fmt.Sprint(2000+i),
				"agents.default.model", fmt.Sprintf(`"m%d"`, i),
			))
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Users) != 20 || !reflect.DeepEqual(loaded, l.Current()) {
		t.Fatalf("users = %d; loaded == live: %v", len(loaded.Users), reflect.DeepEqual(loaded, l.Current()))
	}
}

// messageHandler sends the message of every record to ch.
type messageHandler chan string

func (h messageHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h messageHandler) Handle(_ context.Context, r slog.Record) error {
	h <- r.Message
	return nil
}
func (h messageHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h messageHandler) WithGroup(string) slog.Handler      { return h }
