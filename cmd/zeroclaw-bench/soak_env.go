//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The soak's surroundings: the MCP server that crashes (this binary, run by the
// daemon as `zeroclaw-bench mcp-child`), and the small tmpfs whose disk fills and
// frees under the daemon's data dir.

// serveMCPChild is a stdio MCP server with two tools: ping answers pong, crash
// kills the server (exit 3) before answering, so the daemon sees it die mid-call.
func serveMCPChild() int {
	server := mcp.NewServer(&mcp.Implementation{Name: "soak", Version: "1"}, nil)
	type none struct{}
	mcp.AddTool(server, &mcp.Tool{Name: "ping", Description: "answers pong"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "crash", Description: "kills this server mid-call"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-child:", err)
		return 1
	}
	return 0
}

// mountTmpfs mounts a tmpfs of sizeMiB at dir, for the disk to fill; it fails
// when not root or when the kernel refuses (a container without CAP_SYS_ADMIN).
func mountTmpfs(dir string, sizeMiB int) error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	return syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%dm,mode=0700", sizeMiB))
}

func unmount(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }

// fillDisk writes a file in dir until the filesystem is full and returns its
// path; freeDisk removes it.
func fillDisk(dir string) (string, int64, error) {
	path := filepath.Join(dir, "soak-fill.bin")
	f, err := os.Create(path)
	if err != nil {
		return path, 0, err
	}
	defer f.Close()
	block := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(block)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			return path, n, nil
		}
		if err != nil {
			return path, n, err
		}
		if n > 8<<30 { // not a small filesystem after all
			return path, n, errors.New("wrote 8 GiB without filling the disk")
		}
	}
}

// soakConfig is the daemon's config.toml for the soak: the echo agent with full
// autonomy (no approvals: the tools just run), the crashing MCP server, and the
// metrics listener on a free port.
func soakConfig(self string) string {
	var b strings.Builder
	b.WriteString("[rpc]\nmax_local_connections = 256\n\n")
	b.WriteString("[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n\n")
	fmt.Fprintf(&b, "[mcp.servers.soak]\ncommand = %q\nargs = [\"mcp-child\"]\nstartup_timeout_secs = 10\ncall_timeout_secs = 10\n\n", self)
	b.WriteString("[metrics]\nlisten = \"127.0.0.1:0\"\n")
	return b.String()
}

// pause waits d or until ctx ends, and tells whether ctx is still alive.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
