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
		"compact_at > 1":   "[agents.default]\ncompact_at = 1.5\n",
		"compact_at < 0":   "[agents.default]\ncompact_at = -0.1\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Load(write(t, body)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestDefaultsOfTheNewSections(t *testing.T) {
	c := Default()
	if c.RPC.UploadIdleSecs != 300 || c.RPC.ReplayEvents != 10000 || c.WSS.Bind != "127.0.0.1" || c.WSS.Port != 9781 ||
		c.WSS.Enabled || !c.Security.TrustDaemonUID {
		t.Fatalf("defaults = %s", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestExplicitFalseTrustSticks(t *testing.T) {
	cfg, err := Load(write(t, "[security]\ntrust_daemon_uid = false\n"))
	if err != nil || cfg.Security.TrustDaemonUID {
		t.Fatalf("Load = %v, %v: want trust_daemon_uid false", cfg.Security, err)
	}
	cfg, err = Load(write(t, "[security]\n"))
	if err != nil || !cfg.Security.TrustDaemonUID {
		t.Fatalf("Load = %v, %v: want the default true", cfg.Security, err)
	}
}

func TestFullSchemaLoads(t *testing.T) {
	cfg, err := Load(write(t, `
[rpc]
upload_idle_secs = 60
replay_events = 500
outbound_frames = 16
outbound_bytes = 65536

[wss]
enabled = true
bind = "0.0.0.0"
port = 9999
cert_path = "/etc/zc/cert.pem"
key_path = "/etc/zc/key.pem"
allowed_origins = ["https://app.example.com"]

[permission_profiles.operator]
grants = ["config:read", "config:update", "sessions:execute"]
config_write_paths = ["users.*", "agents.default.model"]
agents = ["default"]

[permission_profiles.root]
admin = true

[users.example]
uid = 1001
permission_profiles = ["operator"]

[users.boss]
uid = 0
permission_profiles = ["root"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RPC.MaxLocalConnections != 512 || cfg.RPC.UploadIdleSecs != 60 || cfg.RPC.OutboundFrames != 16 || cfg.RPC.OutboundBytes != 65536 || !cfg.WSS.Enabled || cfg.WSS.Port != 9999 ||
		*cfg.Users["boss"].UID != 0 || cfg.PermissionProfiles["operator"].Agents[0] != "default" || !cfg.PermissionProfiles["root"].Admin {
		t.Fatalf("cfg = %s", cfg)
	}
}

func TestValidationErrorsNameTheKeyAndLine(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"unknown key", "[security]\ntrust_daemon_id = false\n", "trust_daemon_id"},
		{"idle range", "[rpc]\nupload_idle_secs = 0\n", ":2: rpc.upload_idle_secs = 0"},
		{"replay range", "[rpc]\nreplay_events = -1\n", ":2: rpc.replay_events"},
		{"outbound frames", "[rpc]\noutbound_frames = 0\n", ":2: rpc.outbound_frames = 0"},
		{"outbound bytes", "[rpc]\n\noutbound_bytes = -5\n", ":3: rpc.outbound_bytes = -5"},
		{"port", "[wss]\nport = 70000\n", ":2: wss.port"},
		{"bind", "[wss]\nbind = \"my host\"\n", ":2: wss.bind"},
		{"relative cert", "[wss]\ncert_path = \"c.pem\"\nkey_path = \"/k.pem\"\n", ":2: wss.cert_path"},
		{"cert without key", "[wss]\ncert_path = \"/c.pem\"\n", "set together"},
		{"origin", "[wss]\nallowed_origins = [\"*\"]\n", ":2: wss.allowed_origins"},
		{"bad grant", "[permission_profiles.p]\ngrants = [\"config:write\"]\n", ":2: permission_profiles.p.grants has \"config:write\""},
		{"star grant", "[permission_profiles.p]\ngrants = [\"*\"]\n", "permission_profiles.p.grants"},
		{"bad path", "[permission_profiles.p]\nconfig_write_paths = [\"users\"]\n", "permission_profiles.p.config_write_paths"},
		{"unknown path", "[permission_profiles.p]\nconfig_write_paths = [\"nope.*\"]\n", "permission_profiles.p.config_write_paths"},
		{"unknown agent", "[permission_profiles.p]\nagents = [\"ghost\"]\n", "permission_profiles.p.agents has \"ghost\""},
		{"unknown profile", "\n[users.u]\nuid = 5\npermission_profiles = [\"ghost\"]\n", ":4: users.u.permission_profiles"},
		{"missing uid", "[users.u]\npermission_profiles = []\n", ":1: users.u.uid is missing"},
		{"negative uid", "[users.u]\nuid = -1\n", "users.u.uid = -1"},
		{"duplicate uid", "[users.a]\nuid = 5\n[users.b]\nuid = 5\n", ":4: users.b.uid = 5: users.a has the same uid"},
		{"bad name", "[users.\"a b\"]\nuid = 5\n", "users: the name \"a b\""},
		{"base url", "[providers.p]\nkind = \"openai\"\nbase_url = \"ftp://user:pw@host\"\n", ":3: providers.p.base_url"},
		{"env name", "[providers.p]\nkind = \"openai\"\napi_key_env = \"MY KEY\"\n", "providers.p.api_key_env"},
		{"retries range", "[providers.p]\nkind = \"openai\"\nmax_retries = 11\n", ":3: providers.p.max_retries = 11: must be between 0 and 10"},
		{"negative retries", "[providers.p]\nkind = \"openai\"\nmax_retries = -1\n", ":3: providers.p.max_retries = -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, tt.body)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want the path and %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "pw@") {
				t.Errorf("a URL's credentials leaked into %v", err)
			}
		})
	}
}

func TestMaxRetriesDefaultsToTwoAndZeroSticks(t *testing.T) {
	cfg, err := Load(write(t, "[providers.a]\nkind = \"openai\"\n[providers.b]\nkind = \"openai\"\nmax_retries = 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := cfg.Providers["a"].Retries(), cfg.Providers["b"].Retries(); a != 2 || b != 0 {
		t.Fatalf("Retries() = %d and %d, want 2 (unset) and 0", a, b)
	}
}
