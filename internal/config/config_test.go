package config

import (
	"os"
	"path/filepath"
	"reflect"
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
	if err != nil || !reflect.DeepEqual(cfg, Default()) || cfg.RPC.MaxLocalConnections != 512 {
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

func TestBuiltinProviderAndAgentStayUnlessOverridden(t *testing.T) {
	cfg, err := Load(write(t, `
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "llama3"

[agents.coder]
provider = "local"
autonomy = "full"

[agents.default]
model = "echo-1"
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Providers["echo"].Kind != "echo" || cfg.Providers["local"].Kind != "openai" {
		t.Errorf("providers = %+v", cfg.Providers)
	}
	if d := cfg.Agents["default"]; d.Provider != "echo" || d.Model != "echo-1" || d.AutonomyLevel() != Supervised {
		t.Errorf("default agent = %+v: the file's fields should merge over the built-in ones", d)
	}
	if c := cfg.Agents["coder"]; c.Steps() != 25 || c.AutonomyLevel() != Full || c.Workspace("coder", "/d") != "/d/workspaces/coder" {
		t.Errorf("coder agent = %+v", c)
	}
}

func TestReferencesAreValidated(t *testing.T) {
	for name, body := range map[string]string{
		"unknown provider": "[agents.a]\nprovider = \"nope\"\n",
		"bad kind":         "[providers.p]\nkind = \"gpt\"\n",
		"bad autonomy":     "[agents.default]\nautonomy = \"yolo\"\n",
		"relative dir":     "[agents.default]\nworkspace_dir = \"rel\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Load(write(t, body)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
