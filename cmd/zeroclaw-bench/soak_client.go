//go:build linux

package main

import (
	"bufio"
	"encoding/json"
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

// soakClient is the soak's JSON-RPC client: one connection, calls one at a time,
// notifications (session/update) read past and counted. Unlike client (client.go)
// it decodes every line, since the soak's answers are not the bench's fixed ones.
type soakClient struct {
	nc      net.Conn
	r       *bufio.Reader
	id      int64
	updates int // notifications read past
}

// rpcError is an error answer.
type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// errNoAnswer is a call whose answer never came (the connection broke): its
// effect is in doubt.
var errNoAnswer = errors.New("no answer")

func dialSoak(socket string) (*soakClient, error) {
	nc, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := &soakClient{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	if err := c.call("initialize", map[string]any{"protocolVersion": 1,
		"clientInfo": map[string]any{"name": "zeroclaw-bench-soak", "version": "1"}}, nil); err != nil {
		nc.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

func (c *soakClient) close() { c.nc.Close() }

// call sends method with params and decodes the result into out (when not nil).
// An error answer is an *rpcError; a broken connection wraps errNoAnswer.
func (c *soakClient) call(method string, params, out any) error {
	c.id++
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params, "id": c.id})
	if err != nil {
		return err
	}
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	for {
		b, err := c.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("%w: %v", errNoAnswer, err)
		}
		var msg struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			return fmt.Errorf("undecodable line %.200q: %v", b, err)
		}
		if msg.ID == nil || msg.Method != "" {
			c.updates++
			continue
		}
		if *msg.ID != c.id {
			return fmt.Errorf("answer to %d while waiting for %d", *msg.ID, c.id)
		}
		if msg.Error != nil {
			return msg.Error
		}
		if out != nil {
			return json.Unmarshal(msg.Result, out)
		}
		return nil
	}
}

// soakDaemon is the daemon under soak: one config dir and data dir for the whole
// run, started again after every kill -9.
type soakDaemon struct {
	bin, configDir, socket string
	log                    *os.File
	cmd                    *exec.Cmd
	exited                 chan struct{}
	err                    error
}

func (d *soakDaemon) start() error {
	d.cmd = exec.Command(d.bin, "daemon")
	d.cmd.Env = append(withoutZeroclawEnv(os.Environ()), "ZEROCLAW_CONFIG_DIR="+d.configDir)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d.exited = make(chan struct{})
	if err := d.cmd.Start(); err != nil {
		return err
	}
	exited := d.exited
	go func() {
		d.err = d.cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(readyTimeout)
	for {
		if c, err := dialSoak(d.socket); err == nil {
			c.close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the daemon exited before serving: %v; its log:\n%s", d.err, tailOf(d.log.Name()))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.cmd.Process.Kill()
			<-exited
			return fmt.Errorf("the daemon did not serve within %s; its log:\n%s", readyTimeout, tailOf(d.log.Name()))
		}
	}
}

func (d *soakDaemon) pid() int { return d.cmd.Process.Pid }

// kill9 kills the daemon with SIGKILL and waits for it.
func (d *soakDaemon) kill9() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// stop ends the daemon with SIGTERM and tells whether it exited 0 in time.
func (d *soakDaemon) stop() error {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(stopTimeout):
		d.kill9()
		return fmt.Errorf("the daemon did not exit within %s of SIGTERM", stopTimeout)
	}
	if d.err != nil {
		return fmt.Errorf("the daemon exited with %v after SIGTERM; its log:\n%s", d.err, tailOf(d.log.Name()))
	}
	return nil
}

func tailOf(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4<<10 {
		b = b[len(b)-4<<10:]
	}
	return string(b)
}

// fdCount is how many file descriptors pid holds.
func fdCount(pid int) int64 {
	es, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return -1
	}
	return int64(len(es))
}

// metricValue is the value of the unlabelled series name in Prometheus text.
func metricValue(text, name string) (float64, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
