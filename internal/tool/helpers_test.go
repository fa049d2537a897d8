package tool

import (
	"context"
	"encoding/json/jsontext"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run calls tool with the JSON arguments args in workspace ws.
func run(t *testing.T, tool Tool, ws string, args string) Result {
	t.Helper()
	return tool.Run(context.Background(), Env{Workspace: ws}, jsontext.Value(args))
}

// mustOK fails the test unless r is a success.
func mustOK(t *testing.T, r Result) Result {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected tool error: %s", r.Output)
	}
	return r
}

// mustFail fails the test unless r is an error whose output contains want.
func mustFail(t *testing.T, r Result, want string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want a tool error containing %q, got success: %q", want, r.Output)
	}
	if !strings.Contains(r.Output, want) {
		t.Fatalf("tool error %q does not contain %q", r.Output, want)
	}
}

// writeFiles creates the files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// symlink creates link → target, skipping the test where links cannot be made
// (Windows without the privilege).
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot create symbolic links here: %v", err)
	}
}

// jsonString quotes s as a JSON string.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	v, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}
