//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
)

// The session measurements run against a daemon of their own, started fresh, on
// its built-in agent "default", whose provider is echo: no network, and a reply that
// repeats the prompt's lines, one session/update agent_message_chunk per word.

const (
	newSessionParams = `{"agentAlias":"default","keep_siblings":true}`
	// updatePrefix starts every session/update notification: the daemon writes the
	// members jsonrpc, method, params in this order.
	updatePrefix = `{"jsonrpc":"2.0","method":"session/update"`
	// streamReadBuffer holds the longest line of a streamed turn: the prompt's
	// answer, whose text repeats the whole prompt.
	streamReadBuffer = 4 << 20
)

// newSession calls session/new with keep_siblings and returns the new session's id.
func (c *client) newSession() (string, error) {
	id, _, err := c.newSessionResult()
	return id, err
}

// newSessionResult is newSession that also returns the result's bytes.
func (c *client) newSessionResult() (string, []byte, error) {
	res, err := c.call("session/new", newSessionParams)
	if err != nil {
		return "", nil, fmt.Errorf("session/new: %w", err)
	}
	id, ok := stringMember(res, `"sessionId":"`)
	if !ok {
		return "", nil, fmt.Errorf("session/new: no sessionId in %.200s", res)
	}
	return id, slices.Clone(res), nil
}

// closeSession calls session/close.
func (c *client) closeSession(id string) error {
	if _, err := c.call("session/close", `{"sessionId":`+strconv.Quote(id)+`}`); err != nil {
		return fmt.Errorf("session/close: %w", err)
	}
	return nil
}

// stringMember finds key (`"name":"`) in a JSON object and returns the string after
// it, up to the next quote: enough for session ids, which hold no escapes.
func stringMember(obj []byte, key string) (string, bool) {
	i := bytes.Index(obj, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := obj[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return "", false
	}
	return string(rest[:j]), true
}

// echoPrompt is the prompt of a streamed turn: lines "line N word word", N from 1.
func echoPrompt(lines int) string { return echoPromptWords(lines, 4) }

// echoPromptWords is a prompt of lines "line N word …" of words words each (at
// least 2), N from 1: the echo provider streams an update a word.
func echoPromptWords(lines, words int) string {
	b := make([]byte, 0, lines*(10+5*words))
	for i := range lines {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, "line "...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		for range words - 2 {
			b = append(b, " word"...)
		}
	}
	return string(b)
}

// streamTurn is one measured turn.
type streamTurn struct {
	Updates int           // session/update notifications between the prompt and its answer
	First   time.Duration // from just before writing the prompt to reading its first update
	Elapsed time.Duration // from just before writing the prompt to reading its answer
	Answer  []byte        // the answer line, for checking after the clock stopped
}

// promptAndCount sends one session/prompt and counts the session/update lines until
// the answer to it. Per line it only compares a prefix: the client must not be what
// limits the rate. Any other line is an error. With record, the update lines are
// appended to it as they came.
func (c *client) promptAndCount(sessionID, prompt string, record *[]byte) (streamTurn, error) {
	params, err := json.Marshal(struct {
		SessionID string `json:"sessionId"`
		Prompt    string `json:"prompt"`
	}{sessionID, prompt})
	if err != nil {
		return streamTurn{}, err
	}
	c.buf = c.appendRequest(c.buf[:0], "session/prompt", string(params))
	prefix := []byte(updatePrefix)
	var t streamTurn
	start := time.Now()
	if _, err := c.nc.Write(c.buf); err != nil {
		return t, err
	}
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				err = fmt.Errorf("a line longer than %d bytes", c.r.Size())
			}
			return t, fmt.Errorf("after %d updates: %w", t.Updates, err)
		}
		if bytes.HasPrefix(line, prefix) {
			if t.Updates == 0 {
				t.First = time.Since(start)
			}
			t.Updates++
			if record != nil {
				*record = append(*record, line...)
			}
			continue
		}
		t.Elapsed = time.Since(start)
		t.Answer = slices.Clone(line)
		return t, nil
	}
}

// promptAnswer is what a turn's answer is checked against.
type promptAnswer struct {
	StopReason string `json:"stopReason"`
	Text       string `json:"text"`
	Usage      struct {
		OutputTokens int `json:"outputTokens"`
	} `json:"usage"`
}

// checkAnswer checks that line answers request id with an ended turn, and that every
// word of the reply came as an update (the echo provider streams one per word).
func checkAnswer(line []byte, id int64, updates, promptLines int) error {
	return checkAnswerWords(line, id, updates, 4*promptLines)
}

// checkAnswerWords is checkAnswer of a prompt of at least words words.
func checkAnswerWords(line []byte, id int64, updates, words int) error {
	res, err := resultOf(line, id)
	if err != nil {
		return err
	}
	var a promptAnswer
	if err := json.Unmarshal(res, &a); err != nil {
		return fmt.Errorf("session/prompt result: %w", err)
	}
	switch {
	case a.StopReason != "end_turn":
		return fmt.Errorf("turn ended with %q: %.200s", a.StopReason, a.Text)
	case a.Usage.OutputTokens < words:
		return fmt.Errorf("reply of %d words to a prompt of %d", a.Usage.OutputTokens, words)
	case updates < a.Usage.OutputTokens:
		return fmt.Errorf("%d updates for a reply of %d words", updates, a.Usage.OutputTokens)
	}
	return nil
}

// streamer is one side of the stream comparison: a connection with a session.
type streamer struct {
	c     *client
	pid   int // of the server process; 0 when unknown
	id    string
	words int // per line of its prompts; 0 means 4
}

// turn runs one turn and checks its answer.
func (s *streamer) turn(prompt string, promptLines int, record *[]byte) (streamTurn, error) {
	s.c.nc.SetDeadline(time.Now().Add(ioTimeout))
	t, err := s.c.promptAndCount(s.id, prompt, record)
	if err != nil {
		return t, err
	}
	words := s.words
	if words == 0 {
		words = 4
	}
	return t, checkAnswerWords(t.Answer, s.c.id, t.Updates, words*promptLines)
}

// measureStream runs o.Turns rounds of one daemon turn and one echo turn, each with
// a prompt of o.PromptLines lines, after the daemon's warm-up turn that recorded
// what the echo server replays and o.StreamWarmup rounds that are not counted.
//
// Both servers start cold: in a run of 40 rounds on a quiet machine the echo
// server's first five read 0.5–5.2 M updates/s and its later ones 4–9 M, and the
// daemon's 0.5–1.1 M then 1.0–2.4 M. A ratio of the first ten rounds judged mostly
// how fast each warmed up, and swung with it (0.43–0.63 in three runs of one
// binary minutes apart, 0.24 over 80 rounds).
func measureStream(d, e *streamer, o options, s *streamReport) error {
	return measureStreamOf(d, e, echoPrompt(o.PromptLines), o.PromptLines, o.Turns, o.StreamWarmup, s)
}

// measureStreamOf is measureStream of turns rounds of prompt, of promptLines lines,
// after warmup rounds.
func measureStreamOf(d, e *streamer, prompt string, promptLines, turns, warmup int, s *streamReport) error {
	s.PromptLines, s.Turns, s.Warmup = promptLines, turns, warmup
	s.Words = d.words
	o := struct{ PromptLines, Turns, StreamWarmup int }{promptLines, turns, warmup}
	for i := range o.StreamWarmup {
		if _, err := d.turn(prompt, o.PromptLines, nil); err != nil {
			return fmt.Errorf("daemon warm-up turn %d: %w", i+1, err)
		}
		if _, err := e.turn(prompt, o.PromptLines, nil); err != nil {
			return fmt.Errorf("echo warm-up turn %d: %w", i+1, err)
		}
	}
	var total streamTurn
	var daemonCPU, clientCPU time.Duration
	var ratios []float64
	for i := range o.Turns {
		d0, c0 := processCPU(d.pid), processCPU(os.Getpid())
		t, err := d.turn(prompt, o.PromptLines, nil)
		d1, c1 := processCPU(d.pid), processCPU(os.Getpid())
		if err != nil {
			return fmt.Errorf("daemon turn %d: %w", i+1, err)
		}
		et, err := e.turn(prompt, o.PromptLines, nil)
		if err != nil {
			return fmt.Errorf("echo turn %d: %w", i+1, err)
		}
		rate, echoRate := float64(t.Updates)/t.Elapsed.Seconds(), float64(et.Updates)/et.Elapsed.Seconds()
		s.Updates = append(s.Updates, t.Updates)
		s.TurnMs = append(s.TurnMs, ms(t.Elapsed))
		s.FirstUpdateMs = append(s.FirstUpdateMs, ms(t.First))
		s.PerSecond = append(s.PerSecond, rate)
		s.EchoPerSecond = append(s.EchoPerSecond, echoRate)
		ratios = append(ratios, rate/echoRate)
		total.Updates += t.Updates
		total.Elapsed += t.Elapsed
		daemonCPU += d1 - d0
		clientCPU += c1 - c0
	}
	s.MedianPerSecond = median(s.PerSecond)
	s.FirstUpdateMedianMs = median(s.FirstUpdateMs)
	s.EchoMedianPerSecond = median(s.EchoPerSecond)
	s.Ratio = median(ratios)
	s.TotalUpdates = total.Updates
	s.TotalSeconds = total.Elapsed.Seconds()
	s.TotalPerSecond = float64(total.Updates) / total.Elapsed.Seconds()
	s.DaemonCPUus = us(daemonCPU) / float64(total.Updates)
	s.ClientCPUus = us(clientCPU) / float64(total.Updates)
	return nil
}

// measureSessionNew times o.SessionNews sequential session/new calls on one
// connection, after o.SessionNews/10 unmeasured ones. Each session is closed right
// after (untimed), so the daemon's live-session limit is never reached.
func measureSessionNew(d *daemon, o options, s *sessionNewReport) error {
	s.Calls = o.SessionNews
	c, err := dialInitialized(d.socket)
	if err != nil {
		return err
	}
	defer c.close()
	warmup := o.SessionNews / 10
	c.nc.SetDeadline(time.Now().Add(ioTimeout + time.Duration(warmup+o.SessionNews)*5*time.Millisecond))
	l := make(latencies, 0, o.SessionNews)
	for i := range warmup + o.SessionNews {
		start := time.Now()
		id, err := c.newSession()
		elapsed := time.Since(start)
		if err != nil {
			return fmt.Errorf("call %d: %w", i+1, err)
		}
		if i >= warmup {
			l = append(l, elapsed)
		}
		if err := c.closeSession(id); err != nil {
			return fmt.Errorf("call %d: %w", i+1, err)
		}
	}
	slices.Sort(l)
	s.Latency = summarize(l)
	return nil
}

// measureIdleSessions reads the fresh daemon's RSS, creates and closes one session
// (the first pays for code and data touched once), reads the RSS again, creates
// o.IdleSessions sessions on the same connection, checks that the daemon counts
// them, reads its RSS a third time and closes them.
func measureIdleSessions(d *daemon, o options, s *idleSessionsReport) error {
	s.Sessions = o.IdleSessions
	c, err := dialInitialized(d.socket)
	if err != nil {
		return err
	}
	defer c.close()
	time.Sleep(o.Settle)
	if s.RSSFreshKiB, err = d.rssKiB(); err != nil {
		return err
	}
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	id, err := c.newSession()
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := c.closeSession(id); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	time.Sleep(o.Settle)
	if s.RSSBeforeKiB, err = d.rssKiB(); err != nil {
		return err
	}
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	ids := make([]string, 0, o.IdleSessions)
	for range o.IdleSessions {
		id, err := c.newSession()
		if err != nil {
			return fmt.Errorf("idle session %d: %w", len(ids)+1, err)
		}
		ids = append(ids, id)
	}
	time.Sleep(o.Settle)
	if s.RSSAfterKiB, err = d.rssKiB(); err != nil {
		return err
	}
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	res, err := c.call("status", "")
	if err != nil {
		return err
	}
	var st struct {
		ActiveSessions *int `json:"activeSessions"`
	}
	if err := json.Unmarshal(res, &st); err != nil || st.ActiveSessions == nil {
		return fmt.Errorf("status result without activeSessions: %.200s", res)
	}
	if *st.ActiveSessions != o.IdleSessions {
		return fmt.Errorf("the daemon counts %d active sessions, want %d", *st.ActiveSessions, o.IdleSessions)
	}
	s.PerSessionKiB = float64(s.RSSAfterKiB-s.RSSBeforeKiB) / float64(o.IdleSessions)
	for _, id := range ids {
		if err := c.closeSession(id); err != nil {
			return err
		}
	}
	return nil
}

// measureSessions starts a fresh daemon and measures, in this order, the memory of
// idle sessions and the session/new latency; then it records a turn and an upload
// of the daemon's, starts the echo server with those answers and compares the two on
// the session/update stream and on uploads. Then it stops the daemon, which must
// exit 0.
func measureSessions(o options, maxConns int, r *report, log io.Writer) error {
	fmt.Fprintln(log, "starting a fresh daemon for the session measurements …")
	var extra []string
	if o.OutboundFrames > 0 {
		// Only when asked: since the daemon delivers at each reader's pace
		// (docs/protocol.md, "A daemon that runs for months") the stream is measured
		// with the daemon's defaults (a client reading at its pace is never lagged).
		extra = append(extra, fmt.Sprintf("outbound_frames = %d\noutbound_bytes = %d\n", o.OutboundFrames, 64<<20))
	}
	d, err := startDaemon(o.Zeroclaw, maxConns, extra...)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			d.kill()
		}
	}()
	fmt.Fprintf(log, "idle sessions: %d …\n", o.IdleSessions)
	if err := measureIdleSessions(d, o, &r.IdleSessions); err != nil {
		return fmt.Errorf("idle sessions: %w", err)
	}
	fmt.Fprintf(log, "session/new latency: %d sequential calls …\n", o.SessionNews)
	if err := measureSessionNew(d, o, &r.SessionNew); err != nil {
		return fmt.Errorf("session/new latency: %w", err)
	}

	fmt.Fprintln(log, "recording a turn and an upload of the daemon's for the echo server …")
	ds, a, err := recordAnswers(d, o)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	defer ds.c.close()
	echo, err := startBaseline(o.EchoInProcess, a)
	if err != nil {
		return err
	}
	echoStopped := false
	defer func() {
		if !echoStopped {
			echo.stop()
		}
	}()
	ec, err := dialBlockingInitialized(echo.addr, streamReadBuffer)
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	defer ec.close()
	es := &streamer{c: ec, pid: echo.pid}
	ec.nc.SetDeadline(time.Now().Add(ioTimeout))
	if es.id, err = ec.newSession(); err != nil {
		return fmt.Errorf("echo: %w", err)
	}

	fmt.Fprintf(log, "session/update stream: %d turns of a %d-line prompt per server …\n", o.Turns, o.PromptLines)
	if err := measureStream(ds, es, o, &r.Stream); err != nil {
		return fmt.Errorf("session/update stream: %w", err)
	}
	fmt.Fprintf(log, "uploads: %d rounds of a 10 MiB file per server …\n", o.Uploads)
	if err := measureUploads(ds.c, ec, ds.id, o.Uploads, 1, &r.Upload); err != nil {
		return fmt.Errorf("uploads: %w", err)
	}
	if o.BigPromptLines > 0 {
		fmt.Fprintf(log, "session/update stream of big turns: %d turns of a %d-line prompt of %d words a line per server …\n",
			o.Turns, o.BigPromptLines, o.BigWords)
		if err := measureBigStream(ds, o, &r.StreamBig); err != nil {
			return fmt.Errorf("session/update stream of big turns: %w", err)
		}
	}
	echoStopped = true
	if err := echo.stop(); err != nil {
		return err
	}
	ds.c.nc.SetDeadline(time.Now().Add(ioTimeout))
	if err := ds.c.closeSession(ds.id); err != nil {
		return err
	}
	stopped = true
	return d.stop()
}

// recordAnswers opens the daemon connection of the comparisons, creates its session,
// runs the warm-up turn and one upload, and returns what the echo server answers
// with: the daemon's own results, and the turn's updates to replay.
func recordAnswers(d *daemon, o options) (*streamer, *answers, error) {
	c, err := dialBlockingInitialized(d.socket, streamReadBuffer)
	if err != nil {
		return nil, nil, err
	}
	s := &streamer{c: c, pid: d.cmd.Process.Pid}
	fail := func(err error) (*streamer, *answers, error) {
		c.close()
		return nil, nil, err
	}
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	a := &answers{Results: map[string][]byte{}}
	res, err := c.call("status", "")
	if err != nil {
		return fail(err)
	}
	a.Results["status"] = slices.Clone(res)
	if s.id, a.Results["session/new"], err = c.newSessionResult(); err != nil {
		return fail(err)
	}
	t, err := s.turn(echoPrompt(o.PromptLines), o.PromptLines, &a.Replay)
	if err != nil {
		return fail(fmt.Errorf("warm-up turn: %w", err))
	}
	if res, err = resultOf(t.Answer, c.id); err != nil {
		return fail(err)
	}
	a.Results["session/prompt"] = slices.Clone(res)
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	u, err := c.uploadFile(s.id, uploadPayload(0))
	if err != nil {
		return fail(fmt.Errorf("warm-up upload: %w", err))
	}
	a.Results["file/upload/begin"], a.Results["file/upload/chunk"], a.Results["file/upload/commit"] = u.Begin, u.Chunk, u.Commit
	return s, a, nil
}
