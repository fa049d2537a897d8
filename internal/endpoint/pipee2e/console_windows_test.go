//go:build windows

package pipee2e

import (
	"bufio"
	"encoding/json/v2"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The daemon stops cleanly on the console's control events (docs/protocol.md,
// "Windows"): Ctrl-C, Ctrl-Break and closing the console cancel the running turn
// (answered with stopReason "cancelled"), commit the store and exit 0.
//
// Ctrl-C goes the way a user's does: through a console that the daemon shares with a
// helper process, by GenerateConsoleCtrlEvent. Wine delivers no Ctrl-Break that way
// (it raises SIGQUIT, which ends the process without its handlers) and has no
// console windows to close, so those two events are delivered as Windows delivers
// every console control event: a thread started in the process at kernelbase's
// CtrlRoutine, with the event as its argument, which runs the process's handlers.

var kernel32 = windows.NewLazySystemDLL("kernel32.dll")

// consoleHelper is the "console" role: it gives itself a console of its own, starts
// os.Args[1:] attached to it, and on the line "ctrl-c" on stdin sends Ctrl-C to the
// console. It exits with the child's exit code.
func consoleHelper() int {
	kernel32.NewProc("FreeConsole").Call()
	if r, _, err := kernel32.NewProc("AllocConsole").Call(); r == 0 {
		fmt.Fprintln(os.Stderr, "AllocConsole:", err)
		return 2
	}
	running, name, err := runningEvent()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Env = append(os.Environ(), roleEnv+"=block", runningEnv+"="+name) // for the shell tool it runs
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt) // the helper shares the console: survive it
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			if in.Text() == "ctrl-c" {
				// Not before the tool's processes run: under Wine, a Ctrl-C that
				// came while the daemon was starting cmd.exe (the SIGINT that Wine
				// makes of it landing in the middle of process creation) left the
				// daemon deaf to it and to the next ones, and cmd.exe never started,
				// in 5 of 420 runs on a busy machine. On Windows the console starts
				// the handler's thread from outside, and nothing of the kind applies.
				// The tool's processes are in a group of their own, so the Ctrl-C
				// goes to this helper and the daemon only.
				if ev, _ := windows.WaitForSingleObject(running, uint32(guard/time.Millisecond)); ev != windows.WAIT_OBJECT_0 {
					fmt.Fprintf(os.Stderr, "console: the tool did not run within %s\n", guard)
				}
				attached := consoleProcesses()
				if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_C_EVENT, 0); err != nil {
					fmt.Fprintln(os.Stderr, "GenerateConsoleCtrlEvent:", err)
				} else {
					fmt.Fprintln(os.Stderr, "console: Ctrl-C sent to", attached)
				}
			}
		}
	}()
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode()
		}
		return 2
	}
	return 0
}

// runningEnv names, to the "block" role, the event it sets once it runs.
const runningEnv = "ZEROCLAW_PIPEE2E_RUNNING"

// runningEvent makes the named event that the shell tool's process sets once it
// runs, and returns it with its name.
func runningEvent() (windows.Handle, string, error) {
	name := fmt.Sprintf(`Local\zeroclaw-pipee2e-running-%d`, os.Getpid())
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return 0, "", err
	}
	h, err := windows.CreateEvent(nil, 1, 0, p)
	if err != nil {
		return 0, "", fmt.Errorf("CreateEvent: %w", err)
	}
	return h, name, nil
}

// toolRunning sets the event named by $ZEROCLAW_PIPEE2E_RUNNING, if any.
func toolRunning() {
	name := os.Getenv(runningEnv)
	if name == "" {
		return
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	h, err := windows.OpenEvent(windows.EVENT_MODIFY_STATE, false, p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "OpenEvent:", err)
		return
	}
	windows.SetEvent(h)
	windows.CloseHandle(h)
}

// consoleProcesses lists the ids of the processes attached to this console.
func consoleProcesses() []uint32 {
	ids := make([]uint32, 64)
	n, _, err := kernel32.NewProc("GetConsoleProcessList").Call(uintptr(unsafe.Pointer(&ids[0])), uintptr(len(ids)))
	if n == 0 {
		fmt.Fprintln(os.Stderr, "GetConsoleProcessList:", err)
		return nil
	}
	return ids[:min(int(n), len(ids))]
}

// injectCtrlEvent runs the console control handlers of process pid for event, the
// way Windows does: in a new thread of that process at kernelbase!CtrlRoutine.
func injectCtrlEvent(t *testing.T, pid int, event uint32) {
	t.Helper()
	routine := windows.NewLazySystemDLL("kernelbase.dll").NewProc("CtrlRoutine")
	if err := routine.Find(); err != nil {
		t.Fatalf("kernelbase.dll has no CtrlRoutine export: %v", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_CREATE_THREAD|windows.PROCESS_QUERY_INFORMATION|
		windows.PROCESS_VM_OPERATION|windows.PROCESS_VM_WRITE|windows.PROCESS_VM_READ, false, uint32(pid))
	if err != nil {
		t.Fatalf("open the daemon's process: %v", err)
	}
	defer windows.CloseHandle(h)
	th, _, err := kernel32.NewProc("CreateRemoteThread").Call(uintptr(h), 0, 0, routine.Addr(), uintptr(event), 0, 0)
	if th == 0 {
		t.Fatalf("start CtrlRoutine in the daemon: %v", err)
	}
	// Not waited for: Go's handler of a close event never returns (the process ends
	// first), as Windows ends the process when it does.
	windows.CloseHandle(windows.Handle(th))
}

const turnConfig = "[agents.default]\nautonomy = \"full\"\n"

func TestConsoleEventsStopTheDaemonCleanly(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// launch starts the daemon and returns it and how to deliver the event
		launch func(t *testing.T, dir string) (*proc, func(pid int))
	}{
		{"ctrl-c", func(t *testing.T, dir string) (*proc, func(int)) {
			cmd := exec.Command(self, binary, "daemon")
			cmd.Env = append(environ(dir, nil), roleEnv+"=console")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			p := start(t, cmd)
			return p, func(int) {
				if _, err := stdin.Write([]byte("ctrl-c\n")); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"ctrl-break", func(t *testing.T, dir string) (*proc, func(int)) {
			d := launchDaemon(t, dir, []string{roleEnv + "=block"})
			return d.proc, func(pid int) { injectCtrlEvent(t, pid, windows.CTRL_BREAK_EVENT) }
		}},
		{"console closed", func(t *testing.T, dir string) (*proc, func(int)) {
			d := launchDaemon(t, dir, []string{roleEnv + "=block"})
			return d.proc, func(pid int) { injectCtrlEvent(t, pid, windows.CTRL_CLOSE_EVENT) }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := configDir(t, turnConfig)
			p, deliver := tc.launch(t, dir)
			pipe := pipeFor(dir, nil)
			p.stderr.waitFor(t, "msg=serving endpoint="+pipe+" ", p.exited)

			c := dialRaw(t, pipe)
			pid := int(c.initialize()["serverPid"].(float64))
			t.Cleanup(func() { // the helper's child outlives a killed helper
				if dp, err := os.FindProcess(pid); err == nil {
					dp.Kill()
					dp.Release()
				}
			})
			c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"stop-me"},"id":2}`, float64(2))
			prompt := "/tool shell " + shellArgs(t, `"`+self+`"`)
			c.write(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"stop-me","prompt":` + jsonString(t, prompt) + `},"id":3}` + "\n")
			for {
				m := c.recv()
				if pr, _ := m["params"].(map[string]any); pr["type"] == "tool_call" {
					break
				}
				if _, ok := m["method"]; !ok {
					t.Fatalf("the turn ended before its tool ran: %v", m)
				}
			}

			deliver(pid)
			answer := c.recvAll()
			if err := p.wait(); err != nil {
				t.Fatalf("exit: %v\n%s", err, p.stderr.String())
			}
			if r, _ := answer[float64(3)]["result"].(map[string]any); r["stopReason"] != "cancelled" {
				t.Fatalf("the running prompt was answered %v, want stopReason cancelled", answer[float64(3)])
			}
			log := p.stderr.String()
			if !strings.Contains(log, `msg="shutting down"`) || !strings.Contains(log, "msg=stopped") {
				t.Fatalf("no clean shutdown in the log:\n%s", log)
			}

			// What the store was owed is there after a restart: the prompt and the
			// tool call of the cancelled turn.
			d := startDaemon(t, dir, nil)
			r := dialRaw(t, d.pipe)
			r.initialize()
			if res := r.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"stop-me"},"id":2}`, float64(2))["result"].(map[string]any); res["resumed"] != true {
				t.Fatalf("resume after the stop: %v", res)
			}
			msgs := r.call(`{"jsonrpc":"2.0","method":"session/messages","params":{"sessionId":"stop-me"},"id":3}`, float64(3))["result"].(map[string]any)["messages"].([]any)
			var roles []string
			for _, row := range msgs {
				roles = append(roles, row.(map[string]any)["role"].(string))
			}
			if len(msgs) < 2 || msgs[0].(map[string]any)["text"] != prompt || roles[1] != "tool_call" {
				t.Fatalf("transcript after the stop: %v", msgs)
			}
			t.Logf("transcript after the stop: %s", strings.Join(roles, " "))
			for _, line := range strings.Split(log, "\n") {
				if strings.HasPrefix(line, "console: ") {
					t.Log(line)
				}
			}
		})
	}
}

// shellArgs is the shell tool's JSON arguments for command.
func shellArgs(t *testing.T, command string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
