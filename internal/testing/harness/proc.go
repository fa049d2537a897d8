package harness

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Proc is a started process whose stderr goes into a Log.
type Proc struct {
	Cmd    *exec.Cmd
	Stderr *Log
	Exited <-chan struct{} // closed once the process exited

	t    testing.TB
	name string
	err  error // the exit status, once Exited is closed
}

// Start starts cmd with its stderr into stderr (a new Log when nil). At the test's
// cleanup it kills the process, waits for it and, if the test failed, logs its
// stderr under name.
func Start(t testing.TB, name string, cmd *exec.Cmd, stderr *Log) *Proc {
	t.Helper()
	if stderr == nil {
		stderr = &Log{}
	}
	exited := make(chan struct{})
	p := &Proc{Cmd: cmd, Stderr: stderr, Exited: exited, t: t, name: name}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, stderr.String())
		}
	})
	return p
}

// Err is the exit status once the process exited, else nil.
func (p *Proc) Err() error {
	select {
	case <-p.Exited:
		return p.err
	default:
		return nil
	}
}

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.Exited:
		return false
	default:
		return true
	}
}

// Wait waits for the process to exit, at most within, and returns its exit status.
func (p *Proc) Wait(within time.Duration) error {
	p.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-p.Exited:
		return p.err
	case <-timer.C:
		p.t.Fatalf("%s still running after %s:\n%s", p.name, within, p.Stderr.String())
		return nil
	}
}

// Run runs cmd to completion, at most within, and returns what it wrote. A command
// still running then is killed and fails t.
func Run(t testing.TB, cmd *exec.Cmd, within time.Duration) (stdout, stderr string, err error) {
	t.Helper()
	var o, e Log
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		cmd.Process.Kill()
		t.Fatalf("%s did not finish within %s; stderr:\n%s", strings.Join(cmd.Args, " "), within, e.String())
	}
	return o.String(), e.String(), err
}

// ExitCode is the exit code err of a finished command tells: 0 for nil, -1 when the
// command did not exit by itself (it failed to start, or was killed by a signal).
func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
