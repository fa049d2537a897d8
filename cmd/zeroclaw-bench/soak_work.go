//go:build linux

package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// The soak's mixed work. Each worker keeps one connection, makes it again when the
// daemon dies under it, and records what the daemon acknowledged in the ledger;
// a call whose answer never came is in doubt and is not counted as acknowledged.

// ledger is what the daemon acknowledged: per session, the markers of the turns
// that ended end_turn, and the last config value written.
type ledger struct {
	mu       sync.Mutex
	sessions map[string][]int64
	retired  map[string]bool // sessions no prompter uses any more: deleted once verified
	acked    int             // turns acknowledged in all
	// cfgLog is every rpc.upload_idle_secs value written, in order; cfgAcked is the
	// index of the last acknowledged one (-1: none yet). The config may hold it or
	// any value sent after it (in flight, or whose answer never came).
	cfgLog   []int
	cfgAcked int
}

func (l *ledger) addSession(id string) {
	l.mu.Lock()
	l.sessions[id] = nil
	l.mu.Unlock()
}

func (l *ledger) ack(id string, marker int64) {
	l.mu.Lock()
	if m, ok := l.sessions[id]; ok {
		l.sessions[id] = append(m, marker)
		l.acked++
	}
	l.mu.Unlock()
}

func (l *ledger) forget(id string) {
	l.mu.Lock()
	delete(l.sessions, id)
	delete(l.retired, id)
	l.mu.Unlock()
}

func (l *ledger) retire(id string) {
	l.mu.Lock()
	l.retired[id] = true
	l.mu.Unlock()
}

// any returns a session of the ledger a prompter still uses, at random; "" when
// there is none. Never a retired one: attaching would make it live again, and
// the daemon keeps 64 live sessions at most.
func (l *ledger) any() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var active []string
	for id := range l.sessions {
		if !l.retired[id] {
			active = append(active, id)
		}
	}
	if len(active) == 0 {
		return ""
	}
	return active[rand.IntN(len(active))]
}

// snapshot copies the ledger, for a verification: the sessions and those retired.
func (l *ledger) snapshot() (map[string][]int64, map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := make(map[string][]int64, len(l.sessions))
	for id, m := range l.sessions {
		s[id] = append([]int64(nil), m...)
	}
	r := make(map[string]bool, len(l.retired))
	for id := range l.retired {
		r[id] = true
	}
	return s, r
}

// configSince is the index of the last acknowledged config value (-1: none).
func (l *ledger) configSince() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfgAcked
}

// configAllowed is what the config may hold if it holds what was acknowledged
// when configSince said from: the values written from then on.
func (l *ledger) configAllowed(from int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.cfgLog[from:]...)
}

// worker runs step every interval on a connection of its own until ctx ends,
// reconnecting after the daemon died under it. step's error answers are counted
// by code; a broken connection is dropped and made again.
func (s *soak) worker(ctx context.Context, name string, every time.Duration, step func(*soakClient) error) {
	var c *soakClient
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	for pause(ctx, every) {
		if c == nil {
			var err error
			if c, err = dialSoak(s.d.socket); err != nil {
				s.count(name + ": connect failed")
				c = nil
				continue
			}
		}
		err := step(c)
		var re *rpcError
		switch {
		case err == nil:
		case errors.As(err, &re):
			s.count(fmt.Sprintf("%s: error %d", name, re.Code))
		case errors.Is(err, errNoAnswer):
			s.count(name + ": connection lost")
			c.close()
			c = nil
		default:
			s.count(name + ": " + err.Error())
			c.close()
			c = nil
		}
	}
}

// turnsPerSession is how many turns a prompter runs in a session before it
// closes it and leaves it to the verification, which deletes it once it checked
// it after a kill -9: storage stays proportional to what is kept, and every
// acknowledged turn is checked after a crash.
const turnsPerSession = 20

// prompter runs turns with tools (list_dir and the MCP server's ping; every 15th
// the MCP server's crash) in sessions of its own, and retires each session after
// turnsPerSession turns.
type prompter struct {
	s     *soak
	mine  []string
	turns map[string]int
}

func (p *prompter) step(c *soakClient) error {
	if len(p.mine) < 2 {
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := c.call("session/new", map[string]any{"agentAlias": "default", "keep_siblings": true}, &r); err != nil {
			return err
		}
		p.s.led.addSession(r.SessionID)
		p.mine = append(p.mine, r.SessionID)
		return nil
	}
	i := rand.IntN(len(p.mine))
	id := p.mine[i]
	if p.turns[id] >= turnsPerSession {
		p.s.led.retire(id)
		p.mine = append(p.mine[:i], p.mine[i+1:]...)
		delete(p.turns, id)
		p.s.count("sessions retired")
		// Not live any more (64 at most are), its history stays durable.
		return c.call("session/close", map[string]any{"sessionId": id}, nil)
	}
	marker := p.s.markers.Add(1)
	tool := "ping"
	if marker%15 == 0 {
		tool = "crash"
		p.s.count("mcp crashes asked")
	}
	prompt := fmt.Sprintf("soak-%d\n/tool list_dir {}\n/tool soak__%s {}", marker, tool)
	var r struct {
		StopReason string `json:"stopReason"`
		Text       string `json:"text"`
	}
	err := c.call("session/prompt", map[string]any{"sessionId": id, "prompt": prompt}, &r)
	var re *rpcError
	if errors.As(err, &re) && re.Code == -32000 {
		p.mine = append(p.mine[:i], p.mine[i+1:]...) // the verification judges the ledger's
	}
	if err != nil {
		return err
	}
	p.turns[id]++
	if r.StopReason != "end_turn" {
		p.s.count("turns ended " + r.StopReason)
		return nil
	}
	if !strings.HasPrefix(r.Text, fmt.Sprintf("echo: soak-%d\n", marker)) {
		return fmt.Errorf("turn soak-%d answered %.100q", marker, r.Text)
	}
	p.s.led.ack(id, marker)
	p.s.count("turns acknowledged")
	return nil
}

// attach attaches a fresh connection to a session of the ledger, replaying it
// all, then hangs up: connections come and go.
func (s *soak) attach(_ *soakClient) error {
	id := s.led.any()
	if id == "" {
		return nil
	}
	c, err := dialSoak(s.d.socket)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	defer c.close()
	if err := c.call("session/attach", map[string]any{"sessionId": id, "afterSeq": 0}, nil); err != nil {
		var re *rpcError
		if errors.As(err, &re) && re.Code == -32000 {
			return nil // deleted by its prompter meanwhile
		}
		return err
	}
	s.count("attaches")
	s.add("updates replayed", c.updates)
	return nil
}

// uploadPayloads are the files the uploader sends in turn: few, so that the
// daemon's deduplication keeps the workspace from growing.
const uploadPayloads = 4

// upload sends a 1.2 MiB file (two chunks) into a session of the ledger.
func (s *soak) upload(c *soakClient) error {
	id := s.led.any()
	if id == "" {
		return nil
	}
	n := s.uploads.Add(1) % uploadPayloads
	data := make([]byte, 1200<<10)
	for i := range data {
		data[i] = byte(i*13 + i>>10)
	}
	binary.LittleEndian.PutUint64(data, uint64(n))
	var b struct {
		UploadID string `json:"upload_id"`
	}
	if err := c.call("file/upload/begin", map[string]any{"session_id": id, "size_bytes": len(data), "filename": "soak.bin"}, &b); err != nil {
		var re *rpcError
		if errors.As(err, &re) && re.Code == -32000 {
			return nil
		}
		return err
	}
	for off := 0; off < len(data); off += chunkBytes {
		chunk := data[off:min(off+chunkBytes, len(data))]
		if err := c.call("file/upload/chunk", map[string]any{"upload_id": b.UploadID, "offset": off,
			"data_b64": base64.StdEncoding.EncodeToString(chunk)}, nil); err != nil {
			return err
		}
	}
	var r struct {
		Size int `json:"size_bytes"`
	}
	if err := c.call("file/upload/commit", map[string]any{"upload_id": b.UploadID}, &r); err != nil {
		var re *rpcError
		if errors.As(err, &re) && re.Code == -32000 {
			return nil
		}
		return err
	}
	if r.Size != len(data) {
		return fmt.Errorf("upload committed %d bytes, want %d", r.Size, len(data))
	}
	s.count("uploads committed")
	return nil
}

// writeConfig sets rpc.upload_idle_secs to the next of 50 values: a config write
// the daemon owes the file, checked after each restart.
func (s *soak) writeConfig(c *soakClient) error {
	v := 300 + int(s.configs.Add(1)%50)
	// Logged before it is sent: a verification running meanwhile may read it.
	s.led.mu.Lock()
	s.led.cfgLog = append(s.led.cfgLog, v)
	at := len(s.led.cfgLog) - 1
	s.led.mu.Unlock()
	err := c.call("config/set", map[string]any{"prop": "rpc.upload_idle_secs", "value": v}, nil)
	if err == nil {
		s.led.mu.Lock()
		s.led.cfgAcked = at
		s.led.mu.Unlock()
		s.count("config writes acknowledged")
	}
	return err
}

// probe runs one turn on a fresh connection and session, deleted after: whether
// the daemon works (after the disk was freed).
func (s *soak) probe(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if last = s.probeOnce(); last == nil {
			return nil
		}
		pause(ctx, 200*time.Millisecond)
	}
	return last
}

func (s *soak) probeOnce() error {
	c, err := dialSoak(s.d.socket)
	if err != nil {
		return err
	}
	defer c.close()
	var n struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call("session/new", map[string]any{"agentAlias": "default", "keep_siblings": true}, &n); err != nil {
		return err
	}
	defer c.call("session/delete", map[string]any{"sessionId": n.SessionID}, nil)
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := c.call("session/prompt", map[string]any{"sessionId": n.SessionID, "prompt": "probe"}, &r); err != nil {
		return err
	}
	if r.StopReason != "end_turn" {
		return fmt.Errorf("the probe turn ended %s", r.StopReason)
	}
	return nil
}
