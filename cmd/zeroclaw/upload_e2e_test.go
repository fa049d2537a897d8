//go:build unix

package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUploadCommandLandsA10MBFileByteIdentical(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	res := c.must("session/new", `{"agentAlias":"default"}`)
	sid, ws := res["sessionId"].(string), res["workspaceDir"].(string)

	big := make([]byte, 10_000_000)
	rand.Read(big)
	dir := t.TempDir()
	bigPath, smallPath := filepath.Join(dir, "big.bin"), filepath.Join(dir, "photo.png")
	os.WriteFile(bigPath, big, 0o600)
	os.WriteFile(smallPath, []byte("not really a png"), 0o600)

	out, errOut, code := zeroclaw(t, h, "upload", "--session", sid, bigPath, smallPath)
	if code != 0 {
		t.Fatalf("upload: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout %q: want one JSON entry per file", out)
	}
	var entries []map[string]any
	for _, l := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		entries = append(entries, e)
	}
	sum := sha256.Sum256(big)
	want := "uploads/" + hex.EncodeToString(sum[:]) + ".bin"
	if entries[0]["workspace_path"] != want || entries[0]["size_bytes"] != float64(len(big)) || entries[0]["deduplicated"] != false {
		t.Errorf("entry = %v", entries[0])
	}
	got, err := os.ReadFile(filepath.Join(ws, want))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("on disk: %d bytes, %v; want the 10 MB byte for byte", len(got), err)
	}
	if m, _ := entries[1]["marker"].(string); !strings.HasPrefix(m, "[IMAGE:uploads/") {
		t.Errorf("png entry = %v", entries[1])
	}
	// Not a terminal: the progress is plain lines on stderr, reaching 100%.
	if !strings.Contains(errOut, "big.bin: 10000000/10000000 bytes (100%)") || strings.Contains(errOut, "\x1b[") {
		t.Errorf("stderr = %q", errOut)
	}

	// The entry's ref_id attaches the file to a prompt.
	r := c.must("session/prompt", `{"sessionId":"`+sid+`","prompt":"see","attachments":[{"ref_id":"`+entries[0]["ref_id"].(string)+`"}]}`)
	if !strings.Contains(r["text"].(string), "[Document: big.bin] "+want) {
		t.Errorf("prompt reply %q lacks the marker", r["text"])
	}

	_, errOut, code = zeroclaw(t, h, "upload", "--session", "no-such-session", smallPath)
	if code == 0 || !strings.Contains(errOut, "session not found") {
		t.Errorf("unknown session: exit %d, %q", code, errOut)
	}
}
