package auth

import (
	"slices"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
)

// Grant is a "<resource>:<verb>" permission (config.KnownGrants), or Admin.
type Grant string

// The grants (docs/protocol.md, "Authorization").
const (
	ConfigRead      Grant = config.GrantConfigRead
	ConfigUpdate    Grant = config.GrantConfigUpdate
	FilesCreate     Grant = config.GrantFilesCreate
	SessionsExecute Grant = config.GrantSessionsExecute
	SessionsRead    Grant = config.GrantSessionsRead
	SystemRead      Grant = config.GrantSystemRead
	MemoryRead      Grant = config.GrantMemoryRead
	MemoryWrite     Grant = config.GrantMemoryWrite
	// Admin is held only by admins (the operator, or a user with an admin profile);
	// no profile can list it as a grant.
	Admin Grant = "admin"
)

// Credential is what a connection proved at initialize. Authority is derived from it
// again on every call, against the configuration in force at that moment.
type Credential struct {
	// UID is a local peer's uid; -1 when it is unknown: on Windows, which has no uids
	// (the pipe's ACL admits only the daemon's own user), or where reading the
	// peer's credentials failed, which Resolve refuses.
	UID int
	// Pairing is the hash of the pairing token a WSS peer presented; empty for a
	// local peer.
	Pairing string
}

// Local is the credential of a local peer.
func Local(uid int) Credential { return Credential{UID: uid} }

// Authority is what one principal may do under one configuration.
type Authority struct {
	Principal Principal
	grants    []string
	paths     []string
	agents    []string
}

// Has reports whether the authority holds g. Admins hold every grant.
func (a Authority) Has(g Grant) bool {
	return a.Principal.Admin || (g != Admin && slices.Contains(a.grants, string(g)))
}

// MayWrite reports whether config/set may change prop: admins always; others when
// one of their config_write_paths covers it ("*", a "p.*" prefix, or prop itself).
func (a Authority) MayWrite(prop string) bool {
	if a.Principal.Admin {
		return true
	}
	for _, p := range a.paths {
		if p == "*" || p == prop {
			return true
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasSuffix(prefix, ".") && strings.HasPrefix(prop, prefix) {
			return true
		}
	}
	return false
}

// MayUseAgent reports whether the principal may run sessions of alias.
func (a Authority) MayUseAgent(alias string) bool {
	return a.Principal.Admin || slices.Contains(a.agents, "*") || slices.Contains(a.agents, alias)
}

// Policy turns credentials into authority. Its zero value trusts nothing but what
// the configuration says; DaemonUID must be set for the operator to be recognized.
type Policy struct {
	// DaemonUID is the daemon's own uid (os.Getuid), -1 on Windows, which has none.
	DaemonUID int
	Pairings  *Pairings // nil: no pairing token is valid
}

// Resolve returns the authority of cred under cfg (docs/protocol.md, "Authorization"):
//   - a local peer with the daemon's uid, when security.trust_daemon_uid, is the
//     admin operator;
//   - another local uid is the [users.<name>] entry with that uid, else
//     ErrUnknownPeer;
//   - a local peer whose uid is unknown is refused (ErrNoPeerCredentials) where
//     the daemon has a uid: the kernel could not say who connected, and guessing
//     the daemon's own user would make anyone the admin. Where the daemon has no
//     uid either (Windows), the endpoint's ACL admits only the daemon's user, so
//     the peer is that user;
//   - a pairing token is the operator, or the user it was created for, while it is
//     paired (else ErrUnpaired) and the user is in the roster (else ErrUnknownUser).
//
// A user's permission profiles merge: grants, write paths and agents add up, and
// one admin profile makes the user an admin.
func (p Policy) Resolve(cfg config.Config, cred Credential) (Authority, error) {
	if cred.Pairing != "" {
		user, ok := p.Pairings.Lookup(cred.Pairing)
		if !ok {
			return Authority{}, ErrUnpaired
		}
		if user == "" {
			return Authority{Principal: Operator()}, nil
		}
		u, ok := cfg.Users[user]
		if !ok {
			return Authority{}, ErrUnknownUser
		}
		return authorityOf(cfg, user, u), nil
	}
	uid := cred.UID
	if uid < 0 && p.DaemonUID >= 0 {
		return Authority{}, ErrNoPeerCredentials // fail closed, never as the operator
	}
	if uid == p.DaemonUID && cfg.Security.TrustDaemonUID {
		return Authority{Principal: Operator()}, nil
	}
	for name, u := range cfg.Users {
		if u.UID != nil && *u.UID == uid {
			return authorityOf(cfg, name, u), nil
		}
	}
	return Authority{}, ErrUnknownPeer
}

func authorityOf(cfg config.Config, name string, u config.User) Authority {
	a := Authority{Principal: Principal{ID: UserPrefix + name}}
	for _, pn := range u.PermissionProfiles {
		prof, ok := cfg.PermissionProfiles[pn]
		if !ok { // validation prevents this; grant nothing rather than fail open
			continue
		}
		a.Principal.Admin = a.Principal.Admin || prof.Admin
		a.grants = append(a.grants, prof.Grants...)
		a.paths = append(a.paths, prof.ConfigWritePaths...)
		a.agents = append(a.agents, prof.Agents...)
	}
	return a
}
