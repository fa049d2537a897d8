package main

import (
	"bufio"
	"encoding/json/v2"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReadmeQuickTest runs the README's "Quick test" (the seed's socat session) as
// written there: the socat commands and the lines to paste are read from README.md,
// so the README cannot drift from what works.
func TestReadmeQuickTest(t *testing.T) {
	cmds, lines := readmeQuickTest(t)
	h := home(t)
	d := startDaemon(t, h, nil)
	for _, cmd := range cmds {
		t.Run(strings.Fields(cmd)[1], func(t *testing.T) {
			if strings.Contains(cmd, "READLINE") && !socatHasReadline() {
				if os.Getenv("CI") != "" {
					t.Fatal("CI needs a socat built with READLINE (.ci/run builds one)")
				}
				t.Skip("this socat has no READLINE (Debian builds it without); .ci/run builds one")
			}
			out := typeInto(t, d, cmd, lines)
			var results []map[string]any
			for _, l := range strings.Split(out, "\n") {
				l = strings.TrimSpace(l)
				if !strings.HasPrefix(l, `{"jsonrpc":"2.0","result"`) {
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("%v in %q", err, l)
				}
				results = append(results, m)
			}
			if len(results) != 2 {
				t.Fatalf("want the initialize and status results, got output:\n%s", out)
			}
			init := results[0]["result"].(map[string]any)
			status := results[1]["result"].(map[string]any)
			if init["protocolVersion"] != float64(1) || init["serverVersion"] != "0.8.6" || results[0]["id"] != float64(1) {
				t.Errorf("initialize result %v", results[0])
			}
			if status["serverVersion"] != "0.8.6" || results[1]["id"] != float64(2) {
				t.Errorf("status result %v", results[1])
			}
		})
	}
}

// readmeQuickTest returns the socat commands and the JSON lines of the README's
// "Quick test" section.
func readmeQuickTest(t *testing.T) (cmds, lines []string) {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## Quick test"
		case !in:
		case strings.HasPrefix(l, "socat "):
			cmds = append(cmds, l)
		case strings.HasPrefix(l, `{"jsonrpc"`):
			lines = append(lines, l)
		}
	}
	if len(cmds) == 0 || len(lines) != 2 {
		t.Fatalf("README.md has no Quick test section with socat commands and two lines (%q, %q)", cmds, lines)
	}
	return cmds, lines
}

func socatHasReadline() bool {
	out, err := exec.Command("socat", "-V").Output()
	return err == nil && strings.Contains(string(out), "#define WITH_READLINE 1")
}

// typeInto runs cmd in a pseudo-terminal under bash (socat READLINE needs a
// terminal, as it has when a person types), types lines one at a time, and returns
// everything the terminal showed. Like a person, it types once socat has connected
// (the daemon logs the connection; socat opens its terminal side first), and each
// next line once the answer to the last one shows.
func typeInto(t *testing.T, d *daemon, cmd string, lines []string) string {
	t.Helper()
	home := d.home
	opened := strings.Count(d.stderr.String(), `msg="connection opened"`)
	c := exec.Command("script", "-qfec", cmd, "/dev/null")
	c.Env = append(os.Environ(), "HOME="+home, "SHELL=/bin/bash", "TERM=dumb")
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	// waitFor waits for what a person would see on the terminal (or in the daemon's log).
	waitFor := func(what string, buf *syncBuffer, seen func(string) bool) {
		if _, ok := buf.await(seen, nil, 20*time.Second); !ok {
			t.Fatalf("%s never showed; the terminal showed:\n%s", what, out.String())
		}
	}
	waitFor("socat's connection", d.stderr, func(log string) bool {
		return strings.Count(log, `msg="connection opened"`) > opened
	})
	for i, l := range lines {
		io.WriteString(stdin, l+"\n")
		waitFor(fmt.Sprintf("the answer to line %d", i+1), &out, func(shown string) bool {
			return strings.Count(shown, `{"jsonrpc":"2.0","result"`) > i
		})
	}
	stdin.Close() // hang up
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.Process.Kill()
		<-done
	}
	return strings.ReplaceAll(out.String(), "\r", "")
}
