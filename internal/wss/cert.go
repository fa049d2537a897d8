package wss

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/atomicfile"
)

// Files of the self-signed certificate in the data dir.
const (
	CertFile = "wss-cert.pem"
	KeyFile  = "wss-key.pem"
)

// certValidity is how long a self-signed certificate is valid. Clients pin its
// fingerprint rather than trust a chain, so a long life costs nothing and spares
// every paired client a re-pin.
const certValidity = 10 * 365 * 24 * time.Hour

// Certificate is the certificate the listener serves, and its fingerprint.
type Certificate struct {
	TLS tls.Certificate
	// Fingerprint is the lowercase hex SHA-256 of the leaf certificate's DER, what a
	// client pins (zeroclaw pair prints it).
	Fingerprint string
}

// Fingerprint returns the lowercase hex SHA-256 of a certificate's DER encoding.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// LoadCertificate loads the certificate at certPath and keyPath when they are set;
// otherwise the self-signed one in dataDir, created on first use and reused after.
func LoadCertificate(dataDir, certPath, keyPath string) (Certificate, error) {
	if certPath != "" {
		c, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return Certificate{}, fmt.Errorf("loading the WSS certificate %s: %w", certPath, err)
		}
		return certificateOf(c), nil
	}
	certPath, keyPath = filepath.Join(dataDir, CertFile), filepath.Join(dataDir, KeyFile)
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err == nil {
		return certificateOf(c), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Certificate{}, fmt.Errorf("loading the WSS certificate %s: %w", certPath, err)
	}
	certPEM, keyPEM, err := selfSigned(time.Now())
	if err != nil {
		return Certificate{}, err
	}
	// The key first: a certificate on disk always has its key beside it.
	if err := atomicfile.Write(keyPath, keyPEM, 0o600); err != nil {
		return Certificate{}, fmt.Errorf("writing the WSS key: %w", err)
	}
	if err := atomicfile.Write(certPath, certPEM, 0o644); err != nil {
		return Certificate{}, fmt.Errorf("writing the WSS certificate: %w", err)
	}
	if c, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return Certificate{}, err
	}
	return certificateOf(c), nil
}

// RemoveTemps removes the temporary files a crash may have left while the
// self-signed certificate and key in dataDir were written (atomicfile), whether or
// not WSS is enabled now, and reports how many it removed. The daemon calls it at
// start, holding the endpoint.
func RemoveTemps(dataDir string) (int, error) {
	removed := 0
	var errs []error
	for _, name := range []string{KeyFile, CertFile} {
		ok, err := atomicfile.RemoveTemp(filepath.Join(dataDir, name))
		if ok {
			removed++
		}
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

func certificateOf(c tls.Certificate) Certificate {
	return Certificate{TLS: c, Fingerprint: Fingerprint(c.Certificate[0])}
}

// selfSigned makes an ECDSA P-256 certificate for localhost, 127.0.0.1, ::1 and the
// host name.
func selfSigned(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	names := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		names = append(names, h)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "zeroclaw daemon", Organization: []string{"zeroclaw"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              names,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the WSS certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}
