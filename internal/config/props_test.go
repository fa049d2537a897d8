package config

import (
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

func withSecret() Config {
	c := Default()
	c.Providers["remote"] = Provider{Kind: "openai", APIKey: "sk-very-secret", BaseURL: "http://127.0.0.1:1/v1"}
	return c
}

func TestGetReturnsJSONOfTheProperty(t *testing.T) {
	c := withSecret()
	n := 0
	c.Users = map[string]User{"root": {UID: &n}}
	for prop, want := range map[string]string{
		"rpc.max_local_connections":      `512`,
		"rpc.upload_idle_secs":           `300`,
		"rpc.replay_events":              `10000`,
		"rpc.replay_bytes":               `268435456`,
		"rpc.outbound_frames":            `2048`,
		"rpc.outbound_bytes":             `4194304`,
		"wss.bind":                       `"127.0.0.1"`,
		"wss.port":                       `9781`,
		"wss.enabled":                    `false`,
		"security.trust_daemon_uid":      `true`,
		"providers.echo.kind":            `"echo"`,
		"providers.remote.api_key":       `"***"`,
		"providers.echo.api_key":         `null`, // unset
		"providers.echo.max_retries":     `null`, // unset: the default
		"agents.default.model":           `null`, // unset
		"agents.default.tools":           `null`,
		"agents.nobody.model":            `null`, // a missing map key
		"users.root.uid":                 `0`,
		"users.ghost.uid":                `null`,
		"users.ghost":                    `null`,
		"providers.remote":               `{"kind":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"***"}`,
		"agents.default":                 `{"provider":"echo","autonomy":"supervised"}`,
		"wss.allowed_origins":            `null`,
		"permission_profiles.any.grants": `null`,
	} {
		got, err := c.Get(prop)
		if err != nil || string(got) != want {
			t.Errorf("Get(%s) = %s, %v; want %s", prop, got, err, want)
		}
	}
}

func TestWholeConfigIsMasked(t *testing.T) {
	c := withSecret()
	all := string(c.MaskedJSON())
	if strings.Contains(all, "sk-very-secret") || !strings.Contains(all, `"api_key":"***"`) {
		t.Fatalf("MaskedJSON = %s", all)
	}
	if !jsontext.Value(all).IsValid() || !strings.HasPrefix(all, `{"rpc":{"max_local_connections":512`) {
		t.Errorf("MaskedJSON = %s", all)
	}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	log.Info("loaded", "config", c, "provider", c.Providers["remote"])
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c.Providers["remote"]), fmt.Sprintf("%v", c.Providers), logged.String()} {
		if strings.Contains(s, "sk-very-secret") {
			t.Errorf("secret printed: %s", s)
		}
	}
}

func TestUnknownPropertiesAreRefusedByName(t *testing.T) {
	c := Default()
	for _, prop := range []string{"", "nope", "rpc.nope", "rpc.max_local_connections.x", "agents", "agents..model",
		"agents.default.nope", "agents.bad name.model", "users.x.uid.y", "providers.a.b.kind"} {
		err := c.Set(prop, jsontext.Value(`1`))
		var pe *PropError
		if !errors.As(err, &pe) || (pe.Reason != ReasonUnknownProperty && pe.Reason != ReasonNotSettable) || pe.Prop != prop {
			t.Errorf("Set(%q) = %v", prop, err)
		}
		if prop != "agents" {
			if _, err := c.Get(prop); !errors.As(err, &pe) || pe.Reason != ReasonUnknownProperty || !strings.Contains(err.Error(), prop) {
				t.Errorf("Get(%q) = %v, want an unknown property naming it", prop, err)
			}
		}
	}
}

func TestSetParsesValuesOfThePropertysType(t *testing.T) {
	for _, tt := range []struct {
		prop, value string
		ok          bool
		want        string // Get afterwards
	}{
		{"rpc.max_local_connections", `7`, true, `7`},
		{"rpc.max_local_connections", `"8"`, true, `8`},
		{"rpc.max_local_connections", `9.0`, true, `9`},
		{"rpc.max_local_connections", `9.5`, false, ``},
		{"rpc.max_local_connections", `"nine"`, false, ``},
		{"rpc.max_local_connections", `" 9"`, false, ``},
		{"rpc.max_local_connections", `true`, false, ``},
		{"rpc.max_local_connections", `null`, false, ``},
		{"wss.enabled", `true`, true, `true`},
		{"wss.enabled", `"true"`, true, `true`},
		{"wss.enabled", `"false"`, true, `false`},
		{"wss.enabled", `"yes"`, false, ``},
		{"wss.enabled", `1`, false, ``},
		{"security.trust_daemon_uid", `false`, true, `false`},
		{"agents.default.model", `"m1"`, true, `"m1"`},
		{"agents.default.model", `1`, false, ``},
		{"agents.default.tools", `["shell","read_file"]`, true, `["shell","read_file"]`},
		{"agents.default.tools", `"shell"`, false, ``},
		{"agents.default.tools", `["shell",1]`, false, ``},
		{"agents.default.tools", `["shell",null]`, false, ``},
		{"agents.default.tools", `[]`, true, `null`}, // empty is unset
		{"providers.echo.max_retries", `0`, true, `0`},
		{"providers.echo.max_retries", `"5"`, true, `5`},
		{"providers.echo.max_retries", `2.5`, false, ``},
		{"agents.default.compact_at", `0.5`, true, `0.5`},
		{"agents.default.compact_at", `"0.25"`, true, `0.25`},
		{"agents.default.compact_at", `0`, true, `0`},
		{"agents.default.compact_at", `"half"`, false, ``},
		{"agents.default.compact_at", `true`, false, ``},
		{"users.new.uid", `1001`, true, `1001`},
		{"users.new.uid", `"0"`, true, `0`},
		{"agents.default", `{}`, false, ``},
		{"agents.default.model", `"unterminated`, false, ``},
	} {
		t.Run(tt.prop+"="+tt.value, func(t *testing.T) {
			c := Default()
			err := c.Set(tt.prop, jsontext.Value(tt.value))
			if (err == nil) != tt.ok {
				t.Fatalf("Set = %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				if !reflect.DeepEqual(c, Default()) {
					t.Error("a refused Set changed the config")
				}
				return
			}
			if got, _ := c.Get(tt.prop); string(got) != tt.want {
				t.Errorf("Get = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSetCreatesAMissingMapKeyWithZeroValues(t *testing.T) {
	c := Default()
	if err := c.Set("agents.fresh.model", jsontext.Value(`"m"`)); err != nil {
		t.Fatal(err)
	}
	if got := c.Agents["fresh"]; got.Model != "m" || got.Provider != "" {
		t.Fatalf("agents.fresh = %+v", got)
	}
	var ve *ValidationError
	if err := c.Validate(); !errors.As(err, &ve) || ve.Key != "agents.fresh.provider" {
		t.Fatalf("Validate = %v: a new agent without provider must not pass", err)
	}
	c.Set("agents.fresh.provider", jsontext.Value(`"echo"`))
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// A user created through its profiles alone has no uid: never root by accident.
	c.Set("users.u.permission_profiles", jsontext.Value(`[]`))
	if err := c.Validate(); !errors.As(err, &ve) || ve.Key != "users.u.uid" {
		t.Fatalf("Validate = %v, want users.u.uid is missing", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := withSecret()
	n := 5
	c.Users = map[string]User{"u": {UID: &n, PermissionProfiles: []string{"p"}}}
	d := c.Clone()
	d.Set("providers.remote.model", jsontext.Value(`"x"`))
	d.Set("users.u.uid", jsontext.Value(`6`))
	d.Users["u"].PermissionProfiles[0] = "q"
	d.Agents["new"] = Agent{}
	if c.Providers["remote"].Model != "" || *c.Users["u"].UID != 5 || c.Users["u"].PermissionProfiles[0] != "p" || len(c.Agents) != 1 {
		t.Fatalf("changing the clone changed the original: %+v", c)
	}
}

func TestWritePaths(t *testing.T) {
	for p, ok := range map[string]bool{
		"*": true, "users.*": true, "users.example.*": true, "rpc.*": true, "agents.default.model": true,
		"users.example.uid": true, "security.trust_daemon_uid": true,
		"users": false, "users.example": false, "users.example.uid.*": false, "nope.*": false,
		"agents.*.model": false, "users.*.*": false, "": false, "rpc.nope": false,
	} {
		if err := CheckWritePath(p); (err == nil) != ok {
			t.Errorf("CheckWritePath(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}
