package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
)

// readmeBlocks returns the fenced blocks of README.md with the given info string.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(strings.TrimPrefix(line, "  ") + "\n")
		}
	}
	return blocks
}

// TestReadmeConfigExamplesLoad checks that every TOML example in the README is a
// config the daemon accepts.
func TestReadmeConfigExamplesLoad(t *testing.T) {
	blocks := readmeBlocks(t, "toml")
	if len(blocks) == 0 {
		t.Fatal("no toml examples found in README.md")
	}
	for i, b := range blocks {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, config.FileName), []byte(b), 0o600)
		if _, err := config.Load(dir); err != nil {
			t.Errorf("README toml example %d does not load: %v\n%s", i+1, err, b)
		}
	}
}

// TestReadmeZeroclawCommands runs every `zeroclaw …` command of the README's sh
// blocks (but the daemon itself, which the test starts) against a running daemon:
// each must succeed as written.
func TestReadmeZeroclawCommands(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	ran := 0
	for _, b := range readmeBlocks(t, "sh") {
		for _, line := range strings.Split(b, "\n") {
			cmd, _, _ := strings.Cut(line, "#")
			cmd = strings.TrimSpace(cmd)
			if !strings.HasPrefix(cmd, "zeroclaw ") || strings.HasPrefix(cmd, "zeroclaw daemon") {
				continue
			}
			c := exec.Command("bash", "-c", cmd)
			c.Env = append(command(h).Env, "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"))
			out, err := c.CombinedOutput()
			if err != nil {
				t.Errorf("README command %q: %v\n%s", cmd, err, out)
			}
			ran++
		}
	}
	if ran == 0 {
		t.Fatal("no zeroclaw commands found in README.md")
	}
}
