package endpoint

import (
	"path/filepath"
	"testing"
)

// env is an injected getenv backed by a map.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(filepath.FromSlash(p))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestResolveDirsPrecedence(t *testing.T) {
	tests := []struct {
		name   string
		flag   string
		vars   map[string]string
		config string
		data   string
	}{
		{"flag beats env and home", "/flag", map[string]string{"ZEROCLAW_CONFIG_DIR": "/env", homeEnv: "/home"}, "/flag", "/flag/data"},
		{"env beats home", "", map[string]string{"ZEROCLAW_CONFIG_DIR": "/env", homeEnv: "/home"}, "/env", "/env/data"},
		{"home is the fallback", "", map[string]string{homeEnv: "/home"}, "/home/.zeroclaw", "/home/.zeroclaw/data"},
		{"data dir override", "/flag", map[string]string{"ZEROCLAW_DATA_DIR": "/var/zc"}, "/flag", "/var/zc"},
		{"relative paths made absolute", "rel", map[string]string{"ZEROCLAW_DATA_DIR": "reldata"}, "rel", "reldata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveDirs(tt.flag, env(tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			want := Dirs{ConfigDir: abs(t, tt.config), DataDir: abs(t, tt.data)}
			if got != want {
				t.Errorf("ResolveDirs = %+v, want %+v", got, want)
			}
		})
	}
}

func TestResolveDirsWithoutAnySourceFails(t *testing.T) {
	if _, err := ResolveDirs("", env(nil)); err == nil {
		t.Fatal("ResolveDirs with nothing set: want an error")
	}
}

func TestAddress(t *testing.T) {
	d := Dirs{ConfigDir: abs(t, "/cfg"), DataDir: abs(t, "/cfg/data")}
	if got := Address(d, env(map[string]string{"ZEROCLAW_SOCKET": "/tmp/x.sock"})); got != "/tmp/x.sock" {
		t.Errorf("Address with ZEROCLAW_SOCKET = %q, want /tmp/x.sock", got)
	}
	if got, want := Address(d, env(nil)), defaultAddress(d); got != want {
		t.Errorf("Address = %q, want %q", got, want)
	}
}

func TestPipeName(t *testing.T) {
	tests := []struct{ dataDir, want string }{
		{`C:\Users\ana\.zeroclaw\data`, `\\.\pipe\zeroclaw-c5c9cb31b1935c6d`},
		{`/home/ana/.zeroclaw/data`, `\\.\pipe\zeroclaw-59667cc41eaeb918`},
	}
	for _, tt := range tests {
		if got := pipeName(tt.dataDir); got != tt.want {
			t.Errorf("pipeName(%q) = %q, want %q", tt.dataDir, got, tt.want)
		}
	}
}
