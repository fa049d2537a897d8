package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMissingFileMeansDefaults(t *testing.T) {
	cfg, err := Load(t.TempDir())
	if err != nil || cfg != Default() || cfg.RPC.MaxLocalConnections != 512 {
		t.Fatalf("Load = %+v, %v; want the defaults", cfg, err)
	}
}

func TestFileOverridesDefaults(t *testing.T) {
	cfg, err := Load(write(t, "[rpc]\nmax_local_connections = 7\n"))
	if err != nil || cfg.RPC.MaxLocalConnections != 7 {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}
}

func TestErrorsNameTheFileAndWhere(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"syntax", "[rpc\n", ":1:"},
		{"type", "[rpc]\n\nmax_local_connections = \"x\"\n", ":3:"},
		{"range", "[rpc]\nmax_local_connections = 0\n", "rpc.max_local_connections = 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, tt.body)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want the path and %q", err, tt.want)
			}
		})
	}
}
