//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readyTimeout bounds the wait for a started daemon's socket.
const readyTimeout = 30 * time.Second

// stopTimeout bounds the wait for a daemon to exit after SIGTERM.
const stopTimeout = 15 * time.Second

// daemon is one zeroclaw daemon process with its own fresh config dir.
type daemon struct {
	dir    string // config dir, a short path under /tmp
	socket string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
	err    error         // Wait's error, valid once exited is closed
	log    *os.File

	// ReadyAfter is the time from exec to the socket accepting a connect.
	ReadyAfter time.Duration
}

// startDaemon starts bin as a daemon in a fresh config dir under /tmp, whose
// config.toml raises rpc.max_local_connections to maxConns (and, with extra, holds
// those lines too), and waits until its socket accepts a connect, polling every
// millisecond.
func startDaemon(bin string, maxConns int, extra ...string) (*daemon, error) {
	// /tmp, not $TMPDIR: the socket path must fit in sun_path (108 bytes).
	dir, err := os.MkdirTemp("/tmp", "zcb")
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "data", "daemon.sock"), exited: make(chan struct{})}
	config := fmt.Sprintf("[rpc]\nmax_local_connections = %d\n", maxConns) + strings.Join(extra, "")
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		d.cleanup()
		return nil, err
	}
	if d.log, err = os.Create(filepath.Join(dir, "daemon.log")); err != nil {
		d.cleanup()
		return nil, err
	}
	d.cmd = exec.Command(bin, "daemon")
	d.cmd.Env = append(withoutZeroclawEnv(os.Environ()), "ZEROCLAW_CONFIG_DIR="+dir)
	d.cmd.Stdout = d.log
	d.cmd.Stderr = d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the run

	start := time.Now()
	if err := d.cmd.Start(); err != nil {
		d.cleanup()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	for {
		c, err := net.Dial("unix", d.socket)
		if err == nil {
			d.ReadyAfter = time.Since(start)
			c.Close()
			return d, nil
		}
		select {
		case <-d.exited:
			err := fmt.Errorf("daemon exited before accepting connections (%v); its log:\n%s", d.err, d.logTail())
			d.cleanup()
			return nil, err
		case <-time.After(time.Millisecond):
		}
		if time.Since(start) > readyTimeout {
			d.cmd.Process.Kill()
			<-d.exited
			err := fmt.Errorf("daemon socket %s not accepting after %s; its log:\n%s", d.socket, readyTimeout, d.logTail())
			d.cleanup()
			return nil, err
		}
	}
}

// withoutZeroclawEnv drops ZEROCLAW_* variables, so that the caller's socket or data
// dir cannot redirect the daemon under test.
func withoutZeroclawEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ZEROCLAW_") {
			out = append(out, kv)
		}
	}
	return out
}

// rssKiB reads VmRSS of the daemon process from /proc.
func (d *daemon) rssKiB() (int64, error) {
	return rssKiB(d.cmd.Process.Pid)
}

func rssKiB(pid int) (int64, error) { return procStatusKiB(pid, "VmRSS:") }

// resetPeakRSS starts the daemon's VmHWM over from its RSS now (Linux's
// clear_refs, 4.0 and later), so that peakRSSKiB reads the highest RSS since. It
// reports false where that cannot be done.
func (d *daemon) resetPeakRSS() bool {
	return os.WriteFile("/proc/"+strconv.Itoa(d.cmd.Process.Pid)+"/clear_refs", []byte("5"), 0) == nil
}

// peakRSSKiB reads VmHWM of the daemon process: the highest its RSS was since it
// started, or since resetPeakRSS.
func (d *daemon) peakRSSKiB() (int64, error) {
	return procStatusKiB(d.cmd.Process.Pid, "VmHWM:")
}

// procStatusKiB reads a field given in kB (field is its name with the colon) of
// /proc/<pid>/status.
func procStatusKiB(pid int, field string) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			f := strings.Fields(string(rest)) // "1234 kB"
			if len(f) == 2 && f[1] == "kB" {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// processCPU returns the user and system CPU time process pid has used, from
// /proc/<pid>/stat (0 for pid 0 or when unreadable). Clock ticks are taken as the
// 100 Hz USER_HZ that Linux reports on every architecture it runs Go on.
func processCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 { // f[0] is field 3 (state); utime and stime are fields 14 and 15
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// stop sends SIGTERM and waits for the process; it fails unless the daemon exited 0
// within stopTimeout. The config dir is removed either way.
func (d *daemon) stop() error {
	defer d.cleanup()
	return d.terminate()
}

// terminate is stop without removing the config dir, for a look at what the
// daemon left (kill or cleanup removes it after).
func (d *daemon) terminate() error {
	select {
	case <-d.exited:
		return fmt.Errorf("daemon had already exited: %v; its log:\n%s", d.err, d.logTail())
	default:
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-d.exited:
	case <-time.After(stopTimeout):
		d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("daemon did not exit within %s of SIGTERM; killed", stopTimeout)
	}
	if d.err != nil {
		var ee *exec.ExitError
		if errors.As(d.err, &ee) {
			return fmt.Errorf("daemon exited with %s after SIGTERM; its log:\n%s", ee.ProcessState, d.logTail())
		}
		return d.err
	}
	return nil
}

// kill ends the process without judging how; for error paths.
func (d *daemon) kill() {
	select {
	case <-d.exited:
	default:
		d.cmd.Process.Kill()
		<-d.exited
	}
	d.cleanup()
}

func (d *daemon) cleanup() {
	if d.log != nil {
		d.log.Close()
	}
	os.RemoveAll(d.dir)
}

// logTail returns the last lines of the daemon's log.
func (d *daemon) logTail() string {
	b, err := os.ReadFile(filepath.Join(d.dir, "daemon.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
