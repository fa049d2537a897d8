package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/wss"
)

// DefaultListen is `zeroclaw web`'s address.
const DefaultListen = "127.0.0.1:7781"

// Config is what the command line tells Run.
type Config struct {
	Listen    string // host:port; a non-loopback host needs TLS and pairing tokens
	Open      bool   // open the login URL in the desktop's browser
	ConfigDir string // --config-dir, for the endpoint and a daemon Run starts
	Cert, Key string // TLS certificate and key off loopback ("": self-signed in the data dir)
	Stdout    io.Writer
	Logger    *slog.Logger
}

// Run serves the web client until ctx ends. Like every client it connects to the
// daemon of the endpoint, starting an ephemeral one when none answers, and holds a
// connection of its own for as long as it runs (which keeps that daemon alive and
// starts it again after a loss, as client.WithReconnect does); each tab dials the
// same endpoint for a connection of its own.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dirs, err := endpoint.ResolveDirs(cfg.ConfigDir, nil)
	if err != nil {
		return err
	}
	addr := endpoint.Address(dirs, nil)
	remote := !loopback(cfg.Listen)

	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(dctx, addr,
		client.WithAutoStart(client.AutoStart{ConfigDir: cfg.ConfigDir}),
		client.WithReconnect(client.Reconnect{GiveUp: 24 * time.Hour, Notify: func(e client.ConnectionEvent) {
			log.Info("daemon connection", "event", e.Kind, "restarted", e.Restarted)
		}}),
		client.WithClientInfo("zeroclaw-web", version.Version),
		client.WithLogger(log))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Initialize(dctx); err != nil {
		return err
	}

	var tlsCfg *tls.Config
	if remote {
		cert, err := wss.LoadCertificate(dirs.DataDir, cfg.Cert, cfg.Key)
		if err != nil {
			return err
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12}
	}
	srv := NewServer(Options{
		Dial:   func(ctx context.Context) (net.Conn, error) { return endpoint.Dial(ctx, c.Endpoint()) },
		Remote: remote, TLS: tlsCfg != nil, Logger: log,
	})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("zeroclaw web: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsCfg,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelInfo)}
	url := "http://" + ln.Addr().String() + "/#token=" + srv.Token()
	if remote {
		url = "https://" + ln.Addr().String() + "/"
		fmt.Fprintf(cfg.Stdout, "zeroclaw web: log in at %s with a pairing token (zeroclaw pair [--user NAME])\n", url)
	} else {
		fmt.Fprintf(cfg.Stdout, "zeroclaw web: open %s\n", url)
	}
	if cfg.Open {
		if err := openBrowser(url); err != nil {
			log.Info("could not open a browser", "err", err)
		}
	}
	served := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			served <- hs.ServeTLS(ln, "", "")
		} else {
			served <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-served:
		return err
	case <-c.Done():
		err = errors.New("zeroclaw web: the daemon connection is over (no daemon answered for a day)")
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	hs.Shutdown(sctx) // hijacked WebSockets are not waited for: close them with the listener
	hs.Close()
	return err
}

// openBrowser opens url in the desktop's browser.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	case "darwin":
		cmd = exec.Command("open", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
