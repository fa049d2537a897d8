package acp

import (
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNativeErrorsBecomeACPCodes(t *testing.T) {
	for _, tt := range []struct {
		in   error
		code int64
	}{
		{&client.Error{Code: client.CodeSessionNotFound, Message: "session not found: x"}, -32002},
		{&client.Error{Code: client.CodeSessionBusy, Message: "session busy: 32 prompts are already waiting"}, -32603},
		{&client.Error{Code: client.CodeSessionLimit, Message: "session limit reached"}, -32603},
		{&client.Error{Code: client.CodeConnectionLimit, Message: "connection limit"}, -32603},
		{&client.Error{Code: client.CodeInvalidParams, Message: "invalid params: cwd must be an absolute path"}, -32602},
		{&client.Error{Code: client.CodeForbidden, Message: "forbidden"}, -32012},
		{fmt.Errorf("calling: %w", client.ErrClosed), -32603},
		{errors.New("anything else"), -32603},
	} {
		var e *jsonrpc.Error
		if !errors.As(acpError(tt.in), &e) || e.Code != tt.code {
			t.Errorf("%v -> %v, want code %d", tt.in, e, tt.code)
			continue
		}
		var ce *client.Error
		if errors.As(tt.in, &ce) && e.Message != ce.Message {
			t.Errorf("%v: message %q, want the daemon's", tt.in, e.Message)
		}
	}
}

func TestToolKindsAndTitles(t *testing.T) {
	for tool, kind := range map[string]string{"read_file": "read", "list_dir": "search", "write_file": "edit", "shell": "execute", "ask_user": "other"} {
		if got := kindOf(tool); got != kind {
			t.Errorf("kindOf(%s) = %s, want %s", tool, got, kind)
		}
	}
	if got := titleOf("shell", []byte(`{"command":"go test ./..."}`)); got != "shell: go test ./..." {
		t.Errorf("title %q", got)
	}
	if got := titleOf("mystery", []byte(`{"n":1}`)); got != "mystery" {
		t.Errorf("title %q", got)
	}
}

func TestURIsAndMIMETypes(t *testing.T) {
	for uri, want := range map[string]string{
		"file:///src/app/main.go":     "/src/app/main.go",
		"file:///tmp/with%20space.md": "/tmp/with space.md",
		"zed://selection/3":           "zed://selection/3",
	} {
		if got := pathOf(uri); got != want {
			t.Errorf("pathOf(%s) = %s, want %s", uri, got, want)
		}
	}
	for mime, want := range map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/svg+xml": "svg", "application/octet-stream": "octetstream", "": "bin"} {
		if got := extOf(mime); got != want {
			t.Errorf("extOf(%q) = %s, want %s", mime, got, want)
		}
	}
	if got := fileName("file:///a/b/photo.webp"); got != "photo.webp" {
		t.Errorf("fileName = %q", got)
	}
}
