package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// maxFrame bounds one JSON-RPC message from a stdio server. A 20 MiB tool result
// passes (and is then cut to MaxOutput); anything larger ends the connection.
const maxFrame = 64 << 20

// maxLogLine bounds one logged line of a server's stderr or of stray stdout.
const maxLogLine = 4 << 10

// process is a running stdio server.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout io.ReadCloser // the JSON-RPC lines of its stdout (stray lines dropped)
	done   chan struct{} // closed once it exited and was reaped
	status string        // after done: how it ended
}

// spawner starts child processes from one goroutine locked to its OS thread, which
// lives as long as the Manager: PR_SET_PDEATHSIG fires when the thread that started
// a child ends, not the process, and a Go thread may otherwise end at any time.
type spawner struct {
	reqs chan spawnReq
	quit chan struct{}
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan spawnReq), quit: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		for {
			select {
			case r := <-sp.reqs:
				r.done <- r.cmd.Start()
			case <-sp.quit:
				return
			}
		}
	}()
	return sp
}

func (sp *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	select {
	case sp.reqs <- r:
		return <-r.done
	case <-sp.quit:
		return errors.New("the daemon is stopping")
	}
}

func (sp *spawner) stop() { close(sp.quit) }

// startProcess starts spec's command: the daemon's environment plus spec.Env, in
// spec.Dir, stderr logged a line at a time under the server's name.
func startProcess(sp *spawner, spec Spec, log *slog.Logger) (*process, error) {
	path, err := exec.LookPath(spec.Command)
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", spec.Command, err)
	}
	cmd := exec.Command(path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = os.Environ()
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = sysProcAttr()
	// The pipes are ours, so that Wait does not close what the readers still read.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = sp.start(cmd)
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("cannot start %s: %w", spec.Command, err)
	}
	p := &process{cmd: cmd, stdin: inW, done: make(chan struct{})}
	p.stdout = filterStdout(outR, spec.Name, log)
	go logLines(errR, func(line string) { log.Info("mcp server stderr", "server", spec.Name, "line", line) })
	go func() {
		err := cmd.Wait()
		p.status = exitStatus(cmd.ProcessState, err)
		close(p.done)
	}()
	return p, nil
}

// exitStatus says how a process ended: "exited with status 3", "was killed by
// signal killed".
func exitStatus(ps *os.ProcessState, err error) string {
	if ps == nil {
		return fmt.Sprintf("ended: %v", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}

// terminate ends the process as the MCP spec says: stdin closed (done by the caller
// closing the session), then SIGTERM after grace, then SIGKILL.
func (p *process) terminate(grace time.Duration) {
	p.stdin.Close()
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	terminateSignal(p.cmd.Process)
	select {
	case <-p.done:
		return
	case <-time.After(2 * time.Second):
	}
	p.cmd.Process.Kill()
	<-p.done
}

// logLines calls logf for each line of r (cut to maxLogLine) until r ends.
func logLines(r io.ReadCloser, logf func(string)) {
	defer r.Close()
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			logf(string(bytes.TrimRight(line, "\r\n")))
			for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line is dropped
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// filterStdout passes the lines of a server's stdout that may be JSON-RPC (their
// first non-blank byte is '{' or '['); any other line (a banner, a stray print) is
// logged and dropped, so that it does not end the connection.
func filterStdout(r io.ReadCloser, server string, log *slog.Logger) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		defer r.Close()
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			first, err := peekFirst(br)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			pass := first == '{' || first == '['
			var dropped []byte
			for {
				chunk, err := br.ReadSlice('\n')
				if pass {
					if _, werr := pw.Write(chunk); werr != nil {
						return // the connection was closed
					}
				} else if len(dropped) < maxLogLine {
					dropped = append(dropped, chunk[:min(len(chunk), maxLogLine-len(dropped))]...)
				}
				if errors.Is(err, bufio.ErrBufferFull) {
					continue
				}
				if err != nil {
					if !pass {
						log.Warn("mcp server wrote a line that is not JSON-RPC to stdout; dropped", "server", server, "line", string(bytes.TrimSpace(dropped)))
					}
					pw.CloseWithError(err)
					return
				}
				break
			}
			if !pass {
				log.Warn("mcp server wrote a line that is not JSON-RPC to stdout; dropped", "server", server, "line", string(bytes.TrimSpace(dropped)))
			}
		}
	}()
	return pr
}

// peekFirst returns the first byte of the next line that is not a space or tab,
// consuming blank lines and the leading blanks.
func peekFirst(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			br.ReadByte()
			continue
		}
		return b[0], nil
	}
}
