//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// raiseNoFile raises this process's open-file limit to its hard limit. Children
// inherit it: the Go runtime restores the original soft limit for them only while
// the program has not set the limit itself.
func raiseNoFile(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Max < need {
		return fmt.Errorf("the hard limit of open files is %d, below the %d this run needs (lower --idle-conns)", lim.Max, need)
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

func currentNoFile() uint64 {
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	return lim.Cur
}

// loadAverage returns the first three fields of /proc/loadavg: other work on the
// machine is the main source of noise in these figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
