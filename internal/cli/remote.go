package cli

import (
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// TokenEnv is the environment variable --token defaults to, so that a token need not
// appear in a command line (and in the process list).
const TokenEnv = "ZEROCLAW_AUTH_TOKEN"

// remoteFlags are the flags that point a client command at a daemon's WSS endpoint
// instead of the local one.
type remoteFlags struct {
	url, token, fingerprint string
}

func (r *remoteFlags) add(f *pflag.FlagSet) {
	f.StringVar(&r.url, "url", "", "wss://host:port of a remote daemon (default: the local endpoint)")
	f.StringVar(&r.token, "token", "", "pairing token for --url (default $"+TokenEnv+")")
	f.StringVar(&r.fingerprint, "fingerprint", "", "SHA-256 fingerprint of the daemon's certificate, as zeroclaw pair prints it (default: verify against the system roots)")
}

// remote reports whether the flags name a remote daemon.
func (r *remoteFlags) remote() bool { return r.url != "" }

// options are the client options of a remote connection.
func (r *remoteFlags) options() []client.Option {
	token := r.token
	if token == "" {
		token = strings.TrimSpace(os.Getenv(TokenEnv))
	}
	var opts []client.Option
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	if r.fingerprint != "" {
		opts = append(opts, client.WithFingerprint(r.fingerprint))
	}
	return opts
}
