package auth

import (
	"errors"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
)

func uid(n int) *int { return &n }

func roster() config.Config {
	c := config.Default()
	c.Agents["coder"] = config.Agent{Provider: "echo"}
	c.PermissionProfiles = map[string]config.PermissionProfile{
		"reader":  {Grants: []string{"config:read", "system:read"}},
		"writer":  {Grants: []string{"config:update"}, ConfigWritePaths: []string{"users.*", "agents.default.model"}, Agents: []string{"coder"}},
		"boss":    {Admin: true},
		"anyagnt": {Agents: []string{"*"}},
	}
	c.Users = map[string]config.User{
		"alice": {UID: uid(1001), PermissionProfiles: []string{"reader", "writer"}},
		"bob":   {UID: uid(1002), PermissionProfiles: []string{"boss"}},
		"carol": {UID: uid(1003), PermissionProfiles: []string{"anyagnt"}},
		"dave":  {UID: uid(1000)}, // the daemon's own uid
		"root":  {UID: uid(0)},
	}
	return c
}

func TestLocalPeersResolveToPrincipals(t *testing.T) {
	const daemon = 1000
	p := Policy{DaemonUID: daemon}
	untrusting := roster()
	untrusting.Security.TrustDaemonUID = false
	for _, tt := range []struct {
		name string
		cfg  config.Config
		uid  int
		want Principal
		err  error
	}{
		{"daemon uid", roster(), daemon, Principal{ID: "operator", Admin: true}, nil},
		{"no peer credentials is nobody, never the operator", roster(), -1, Principal{}, ErrNoPeerCredentials},
		{"roster user", roster(), 1001, Principal{ID: "user:alice"}, nil},
		{"admin profile", roster(), 1002, Principal{ID: "user:bob", Admin: true}, nil},
		{"uid 0 is a real uid", roster(), 0, Principal{ID: "user:root"}, nil},
		{"not in the roster", roster(), 4242, Principal{}, ErrUnknownPeer},
		{"no roster at all", config.Default(), 1001, Principal{}, ErrUnknownPeer},
		{"daemon uid untrusted maps through the roster", untrusting, daemon, Principal{ID: "user:dave"}, nil},
		{"daemon uid untrusted and not in the roster", func() config.Config {
			c := config.Default()
			c.Security.TrustDaemonUID = false
			return c
		}(), daemon, Principal{}, ErrUnknownPeer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := p.Resolve(tt.cfg, Local(tt.uid))
			if a.Principal != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("Resolve(uid %d) = %+v, %v; want %+v, %v", tt.uid, a.Principal, err, tt.want, tt.err)
			}
		})
	}
}

// Windows has no uids: the daemon's is -1 like every pipe peer's, and the pipe's
// ACL admits only the daemon's user.
func TestAPeerWithoutAUIDIsTheOperatorOnlyWhereTheDaemonHasNone(t *testing.T) {
	p := Policy{DaemonUID: -1}
	a, err := p.Resolve(roster(), Local(-1))
	if err != nil || a.Principal != Operator() {
		t.Fatalf("Resolve(pipe peer) on Windows = %+v, %v; want the operator", a.Principal, err)
	}
	untrusting := roster()
	untrusting.Security.TrustDaemonUID = false
	if _, err := p.Resolve(untrusting, Local(-1)); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("Resolve(pipe peer) without trust_daemon_uid = %v, want ErrUnknownPeer", err)
	}
}

func TestProfilesMergeIntoGrants(t *testing.T) {
	p := Policy{DaemonUID: 1000}
	alice, err := p.Resolve(roster(), Local(1001))
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[Grant]bool{
		ConfigRead: true, SystemRead: true, ConfigUpdate: true, // from two profiles
		SessionsExecute: false, FilesCreate: false, SessionsRead: false, Admin: false,
	} {
		if alice.Has(g) != want {
			t.Errorf("alice.Has(%s) = %v", g, !want)
		}
	}
	for prop, want := range map[string]bool{
		"users.x.uid": true, "users.alice.permission_profiles": true, "agents.default.model": true,
		"agents.default.provider": false, "usersx.uid": false, "rpc.max_local_connections": false,
		"permission_profiles.boss.admin": false,
	} {
		if alice.MayWrite(prop) != want {
			t.Errorf("alice.MayWrite(%s) = %v", prop, !want)
		}
	}
	if !alice.MayUseAgent("coder") || alice.MayUseAgent("default") {
		t.Error("alice's agents should be exactly coder")
	}
	carol, _ := p.Resolve(roster(), Local(1003))
	if !carol.MayUseAgent("default") || !carol.MayUseAgent("coder") || carol.Has(SystemRead) || carol.MayWrite("users.x.uid") {
		t.Errorf("carol = %+v: want every agent and nothing else", carol)
	}
	for _, who := range []int{1000, 1002} {
		admin, _ := p.Resolve(roster(), Local(who))
		if !admin.Has(Admin) || !admin.Has(FilesCreate) || !admin.MayWrite("security.trust_daemon_uid") || !admin.MayUseAgent("anything") {
			t.Errorf("uid %d: an admin holds everything: %+v", who, admin)
		}
	}
}

func TestWriteStarCoversEverything(t *testing.T) {
	c := roster()
	c.PermissionProfiles["all"] = config.PermissionProfile{ConfigWritePaths: []string{"*"}}
	c.Users["erin"] = config.User{UID: uid(1005), PermissionProfiles: []string{"all"}}
	a, err := Policy{DaemonUID: 1}.Resolve(c, Local(1005))
	if err != nil || !a.MayWrite("security.trust_daemon_uid") || a.Principal.Admin {
		t.Fatalf("%+v, %v", a, err)
	}
}

func TestPairingTokensResolveWhilePairedAndRostered(t *testing.T) {
	ps, _ := OpenPairings("")
	p := Policy{DaemonUID: 1000, Pairings: ps}
	op, _ := ps.Create("")
	al, _ := ps.Create("alice")
	gone, _ := ps.Create("zed")
	for _, tt := range []struct {
		token string
		want  Principal
		err   error
	}{
		{op, Operator(), nil},
		{al, Principal{ID: "user:alice"}, nil},
		{gone, Principal{}, ErrUnknownUser},
	} {
		h, ok := ps.Verify(tt.token)
		if !ok {
			t.Fatalf("Verify(%s) failed", tt.token)
		}
		a, err := p.Resolve(roster(), Credential{UID: -1, Pairing: h})
		if a.Principal != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("token of %v: %+v, %v", tt.want, a.Principal, err)
		}
	}
	h, _ := ps.Verify(al)
	ps.Revoke("alice")
	if _, err := p.Resolve(roster(), Credential{UID: -1, Pairing: h}); !errors.Is(err, ErrUnpaired) {
		t.Errorf("revoked token resolved: %v", err)
	}
}
