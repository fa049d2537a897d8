//go:build linux

package main

import (
	"fmt"
	"slices"
	"time"
)

// measureBigStream compares the daemon with the echo server on turns of
// o.BigPromptLines lines of o.BigWords words (2,000 lines of 8: 16,000 updates, more
// than the replay log's 10,000 kept events; docs/protocol.md, "No reader is
// lost"): it records one such turn of the daemon's on the session of ds, starts a
// second echo server replaying it, and runs o.Turns rounds after o.StreamWarmup.
func measureBigStream(ds *streamer, o options, s *streamReport) error {
	big := &streamer{c: ds.c, pid: ds.pid, id: ds.id, words: o.BigWords}
	prompt := echoPromptWords(o.BigPromptLines, o.BigWords)
	a := &answers{Results: map[string][]byte{}}
	ds.c.nc.SetDeadline(time.Now().Add(ioTimeout))
	res, err := ds.c.call("status", "")
	if err != nil {
		return err
	}
	a.Results["status"] = slices.Clone(res)
	t, err := big.turn(prompt, o.BigPromptLines, &a.Replay)
	if err != nil {
		return fmt.Errorf("recording turn: %w", err)
	}
	if res, err = resultOf(t.Answer, ds.c.id); err != nil {
		return err
	}
	a.Results["session/prompt"] = slices.Clone(res)
	a.Results["session/new"] = []byte(`{"sessionId":"big"}`)
	echo, err := startBaseline(o.EchoInProcess, a)
	if err != nil {
		return err
	}
	defer echo.stop()
	ec, err := dialBlockingInitialized(echo.addr, streamReadBuffer)
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	defer ec.close()
	es := &streamer{c: ec, pid: echo.pid, id: "big", words: o.BigWords}
	return measureStreamOf(big, es, prompt, o.BigPromptLines, o.Turns, o.StreamWarmup, s)
}
