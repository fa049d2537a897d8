package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/wss"
)

// WithToken sets the pairing token Initialize presents as authToken: a daemon's WSS
// endpoint requires one (zeroclaw pair prints it). A local endpoint ignores it.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithFingerprint pins the daemon's WSS certificate: the connection is accepted only
// when the SHA-256 of the certificate the daemon presents is fingerprint (hex, as
// zeroclaw pair prints it; colons and case do not matter), whoever signed it. Without
// a pin, the certificate must verify against the system's roots.
func WithFingerprint(fingerprint string) Option {
	return func(o *options) {
		o.fingerprint = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(fingerprint), ":", ""))
	}
}

// dialWSS opens a WebSocket to a daemon's wss:// endpoint.
func dialWSS(ctx context.Context, addr string, o options) (*Client, error) {
	f, err := wssFramer(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	c := newClient(addr, o, nil)
	c.firstLink(f, f.Done())
	return c, nil
}

// wssFramer opens a WebSocket to addr and frames it.
func wssFramer(ctx context.Context, addr string, o options) (*wss.Framer, error) {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if pin := o.fingerprint; pin != "" {
		// The pin replaces the chain: a self-signed certificate has none, and a pinned
		// one needs none. Go still checks the handshake's signature with the key of
		// the certificate presented, so only the holder of the pinned key gets here.
		tlsConf.InsecureSkipVerify = true
		tlsConf.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the daemon presented no certificate")
			}
			if got := wss.Fingerprint(raw[0]); got != pin {
				return fmt.Errorf("the daemon's certificate fingerprint is %s, not the pinned %s", got, pin)
			}
			return nil
		}
	}
	transport := &http.Transport{TLSClientConfig: tlsConf, Proxy: http.ProxyFromEnvironment}
	defer transport.CloseIdleConnections()
	ws, resp, err := websocket.Dial(ctx, addr, &websocket.DialOptions{HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, fmt.Errorf("connecting to the daemon at %s: the upgrade was refused (HTTP %s)", addr, resp.Status)
		}
		return nil, fmt.Errorf("connecting to the daemon at %s: %w", addr, err)
	}
	return wss.NewFramer(ws), nil
}
