package tool

import (
	"slices"
	"strings"
	"testing"
)

func TestShellArgumentsAreValidated(t *testing.T) {
	ws := t.TempDir()
	tests := []struct {
		name, args, want string
	}{
		{"no command", `{}`, "invalid arguments: command is required"},
		{"no arguments", ``, "invalid arguments: command is required"},
		{"blank command", `{"command":"  "}`, "invalid arguments: command is required"},
		{"command of the wrong type", `{"command":["ls"]}`, "invalid arguments: "},
		{"zero timeout", `{"command":"true","timeout_secs":0}`, "timeout_secs must be between 1 and 3600, not 0"},
		{"negative timeout", `{"command":"true","timeout_secs":-5}`, "timeout_secs must be between 1 and 3600"},
		{"timeout over the maximum", `{"command":"true","timeout_secs":3601}`, "timeout_secs must be between 1 and 3600"},
		{"fractional timeout", `{"command":"true","timeout_secs":1.5}`, "invalid arguments: "},
		{"timeout as a string", `{"command":"true","timeout_secs":"5"}`, "invalid arguments: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustFail(t, run(t, Shell{}, ws, tt.args), tt.want)
		})
	}
}

func TestChildEnvironmentWithholdsSecrets(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "PWD=/where/the/daemon/runs",
		"OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=sk-2", "ZEROCLAW_AUTH_TOKEN=t",
		"GITHUB_TOKEN=g", "github_token=g", "AWS_SECRET_ACCESS_KEY=a", "CLIENT_SECRET=c",
		"DB_PASSWORD=p", "TOKEN=t", "API_KEY=k", "TOKENIZERS_PARALLELISM=false", "KEYBOARD=us",
	}
	got := childEnv(environ, "/ws")
	want := []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8",
		"TOKENIZERS_PARALLELISM=false", "KEYBOARD=us", "PWD=/ws"}
	if !slices.Equal(got, want) {
		t.Fatalf("childEnv =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCappedBuffer(t *testing.T) {
	c := &cappedBuffer{max: 10}
	for _, p := range []string{"hello", " wor", "ld and more"} {
		if n, err := c.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; a capped buffer always takes everything", p, n, err)
		}
	}
	if got, trunc := c.text(); got != "hello worl\n[output truncated: 10 bytes dropped after the first 10]" || !trunc {
		t.Fatalf("text() = %q, %v", got, trunc)
	}
	// A cut inside a character drops the whole character and counts its bytes.
	c = &cappedBuffer{max: 4}
	c.Write([]byte("abcé!"))
	if got, _ := c.text(); got != "abc\n[output truncated: 3 bytes dropped after the first 3]" {
		t.Fatalf("text() = %q", got)
	}
	c = &cappedBuffer{max: 100}
	c.Write([]byte("ok\xff"))
	if got, trunc := c.text(); got != "ok\uFFFD" || trunc {
		t.Fatalf("text() = %q, %v", got, trunc)
	}
}
