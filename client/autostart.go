package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
)

// AutoStart says how Dial starts a daemon when none answers (WithAutoStart).
type AutoStart struct {
	// Executable is the zeroclaw binary; "" means this program (os.Executable).
	Executable string
	// ConfigDir is passed as --config-dir when not empty; it also locates the data
	// dir, where the daemon's log goes (ephemeral-daemon.log).
	ConfigDir string
	// Wait bounds how long Dial waits for the daemon to serve; zero means 10 s.
	Wait time.Duration
}

// startedDaemon is a daemon Dial started.
type startedDaemon struct {
	pid    int
	exited chan struct{} // closed once it has exited (and was reaped)
}

// LogName is the file in the data dir that receives an auto-started daemon's output.
const LogName = "ephemeral-daemon.log"

// start runs `zeroclaw daemon --ephemeral` detached from this process (its own
// session, no terminal, output to the data dir's log) with this process's environment
// and ZEROCLAW_SOCKET set to addr, then dials addr until it answers. The connection
// that answers first is the client's: an ephemeral daemon waits for its first client,
// and a probe that hung up would count as one.
func (a *AutoStart) start(ctx context.Context, addr string, dirs endpoint.Dirs) (net.Conn, *startedDaemon, error) {
	exe := a.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("starting a daemon: %w", err)
		}
	}
	if err := dirs.Ensure(); err != nil {
		return nil, nil, fmt.Errorf("starting a daemon: %w", err)
	}
	logPath := filepath.Join(dirs.DataDir, LogName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("starting a daemon: %w", err)
	}
	defer logFile.Close() // the child holds its own copy
	args := []string{"daemon", "--ephemeral"}
	if a.ConfigDir != "" {
		args = append(args, "--config-dir", a.ConfigDir)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(withoutVar(os.Environ(), "ZEROCLAW_SOCKET"), "ZEROCLAW_SOCKET="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile // stdin is the null device
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting a daemon (%s): %w", exe, err)
	}
	d := &startedDaemon{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { // reap it whenever it exits, so no zombie stays behind
		cmd.Wait()
		close(d.exited)
	}()

	wait := a.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		nc, err := endpoint.Dial(ctx, addr)
		if err == nil {
			return nc, d, nil
		}
		if !noDaemon(err) {
			return nil, nil, fmt.Errorf("connecting to the daemon started at %s: %w", addr, err)
		}
		select {
		case <-d.exited:
			// Another client may have started one at the same time: ours then exits
			// with "already serving", and theirs answers.
			if nc, err := endpoint.Dial(ctx, addr); err == nil {
				return nc, nil, nil
			}
			return nil, nil, fmt.Errorf("the daemon started for %s exited before serving; see %s", addr, logPath)
		case <-deadline.C:
			return nil, nil, fmt.Errorf("the daemon started for %s did not serve within %s; see %s", addr, wait, logPath)
		case <-ctx.Done():
			return nil, nil, errors.Join(fmt.Errorf("waiting for the daemon started for %s", addr), ctx.Err())
		case <-tick.C:
		}
	}
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
