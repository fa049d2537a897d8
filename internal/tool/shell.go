package tool

import (
	"context"
	"encoding/json/jsontext"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Limits of the shell tool.
const (
	DefaultShellTimeout = 120 * time.Second
	MaxShellTimeout     = 3600 * time.Second
	MaxShellOutput      = 64 << 10 // bytes of combined output kept; the rest is counted and dropped
)

// Delays when a command ends. killDelay is os/exec's WaitDelay: how long Wait waits
// for the shell to exit after it was killed before it gives up on it. drainDelay is
// how long the output pipe may stay open once the shell has exited and its process
// group was killed: only a process that left the group (setsid, a daemon) can still
// hold it, and it is not waited for.
const (
	killDelay  = 500 * time.Millisecond
	drainDelay = 100 * time.Millisecond
)

// Shell is the shell tool: one command run by the system shell (sh -c on Unix,
// cmd /C on Windows) in the workspace.
//
// The command runs in a process group of its own (a job object on Windows), with
// stdin from the null device and stdout and stderr combined into one stream. When
// the call's context ends or the timeout expires, the whole group is killed, so
// children and grandchildren die with the shell and the call returns at once. The
// group is killed also when the shell exits by itself: the call owns whatever it
// started, and a background process left over ("server &") would outlive the turn,
// a cancel and the session, running with nobody to stop it. (On Unix that last kill
// happens after the shell was reaped; its pid cannot be reused while any member of
// its group lives, and if none does the kill finds nothing, save the theoretical
// case that a brand-new group took that number within the microseconds between.)
type Shell struct{}

func (Shell) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameShell,
		Description: "Run a shell command in the workspace directory (sh -c on Unix, cmd /C on Windows) " +
			"and return its combined stdout and stderr. Standard input is empty; background processes " +
			"are killed when the command ends. Output beyond 64 KiB is cut. A non-zero exit status is " +
			"reported as an error.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command line to run."},
    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "Seconds before the command is killed. Default 120."}
  },
  "required": ["command"]
}`),
	}
}

func (Shell) Mutates() bool { return true }

func (Shell) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Command     string `json:"command"`
		TimeoutSecs *int   `json:"timeout_secs"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return failure("invalid arguments: command is required")
	}
	timeout := DefaultShellTimeout
	if a.TimeoutSecs != nil {
		t := time.Duration(*a.TimeoutSecs) * time.Second
		if t < time.Second || t > MaxShellTimeout {
			return failure("invalid arguments: timeout_secs must be between 1 and %d, not %d",
				int(MaxShellTimeout/time.Second), *a.TimeoutSecs)
		}
		timeout = t
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	return runShell(ctx, env.Workspace, a.Command, timeout)
}

func runShell(ctx context.Context, dir, command string, timeout time.Duration) Result {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The pipe is ours, not os/exec's: given an *os.File, Wait returns when the shell
	// exits instead of waiting for every holder of the pipe to close it, so that the
	// group can be killed first and the pipe then drains at once.
	pr, pw, err := os.Pipe()
	if err != nil {
		return failure("cannot start the command: %v", err)
	}
	cmd := shellCommand(runCtx, command)
	cmd.Dir = dir
	cmd.Env = childEnv(os.Environ(), dir)
	cmd.Stdout, cmd.Stderr = pw, pw // stdin stays nil: the null device
	g, err := newProcGroup(cmd)
	if err != nil {
		pr.Close()
		pw.Close()
		return failure("cannot start the command: %v", err)
	}
	defer g.release()
	cmd.Cancel = g.kill
	cmd.WaitDelay = killDelay
	err = cmd.Start()
	pw.Close() // the child has its copy; ours would keep the pipe open forever
	if err != nil {
		pr.Close()
		return failure("cannot start the command: %v", err)
	}
	if err := g.started(); err != nil {
		g.kill()
		cmd.Wait()
		pr.Close()
		return failure("cannot start the command: %v", err)
	}

	out := &cappedBuffer{max: MaxShellOutput}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(out, pr)
	}()

	waitErr := cmd.Wait()
	g.kill() // whatever the command left running in the background
	select {
	case <-drained:
	case <-time.After(drainDelay):
		pr.Close() // unblocks the copy
		<-drained
	}
	pr.Close()

	text, truncated := out.text()
	ps := cmd.ProcessState
	switch {
	case ps != nil && ps.Success():
		return Result{Output: text, Truncated: truncated}
	case ctx.Err() != nil:
		return Result{Output: withNote(text, "cancelled"), IsError: true, Truncated: truncated}
	case runCtx.Err() != nil:
		note := fmt.Sprintf("timed out after %ds", int(timeout/time.Second))
		return Result{Output: withNote(text, note), IsError: true, Truncated: truncated}
	case ps != nil:
		return Result{Output: withNote(text, ps.String()), IsError: true, Truncated: truncated}
	default:
		return Result{Output: withNote(text, waitErr.Error()), IsError: true, Truncated: truncated}
	}
}

// cappedBuffer keeps the first max bytes written to it and counts the rest, which it
// discards: the writer always succeeds, so the pipe keeps draining and the command
// never blocks on a full pipe, while memory stays bounded.
type cappedBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := min(len(p), c.max-len(c.buf))
	c.buf = append(c.buf, p[:keep]...)
	c.dropped += int64(len(p) - keep)
	return len(p), nil
}

// text returns the kept output as valid UTF-8, followed, when bytes were dropped, by
// a line saying how many; truncated reports that.
func (c *cappedBuffer) text() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		s, _ := validText(c.buf, false)
		return s, false
	}
	kept := trimPartialRune(c.buf) // the cut may have split a character
	dropped := c.dropped + int64(len(c.buf)-len(kept))
	s, _ := validText(kept, false)
	return withNote(s, fmt.Sprintf("[output truncated: %d bytes dropped after the first %d]", dropped, len(kept))), true
}

// childEnv is the environment of a command: the daemon's, minus the variables whose
// names suggest secrets. The daemon holds provider API keys and its own auth token in
// its environment; a command is chosen by the model, whose input includes untrusted
// text (files, web pages, tool output), so a prompt injection could otherwise have it
// print a key into the transcript, which goes to the provider and to disk. This is a
// guard against the easy leak, not a sandbox: the command still runs as the daemon's
// user and can read what that user can.
//
// PWD is set to dir, the command's working directory, as a shell would: the
// daemon's own PWD would tell programs that read it the wrong place.
func childEnv(environ []string, dir string) []string {
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !secretName(name) && name != "PWD" {
			env = append(env, kv)
		}
	}
	return append(env, "PWD="+dir)
}

// secretName reports whether an environment variable's name suggests a secret: it
// ends in one of the suffixes below, or equals one without its underscore ("TOKEN").
// _TOKEN covers ZEROCLAW_AUTH_TOKEN. The comparison ignores case: Windows names are
// case-insensitive, and a lower-case "github_token" is as secret as an upper-case one.
func secretName(name string) bool {
	suffixes := [...]string{"_API_KEY", "_APIKEY", "_TOKEN", "_SECRET", "_SECRET_KEY",
		"_ACCESS_KEY", "_PRIVATE_KEY", "_PASSWORD"}
	up := strings.ToUpper(name)
	for _, s := range suffixes {
		if strings.HasSuffix(up, s) || up == s[1:] {
			return true
		}
	}
	return false
}
