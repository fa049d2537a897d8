// Package daemon wires the daemon together and owns its lifecycle: directories,
// config, the local endpoint, the RPC server, ephemeral mode, and the shutdown order.
// It holds no protocol logic of its own.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/mcp"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/memory"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/metrics"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/wss"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// EphemeralGrace is how long an ephemeral daemon waits after its last client leaves.
const EphemeralGrace = time.Second

// Options configure Run.
type Options struct {
	ConfigDir string // --config-dir; empty means ZEROCLAW_CONFIG_DIR or $HOME/.zeroclaw
	Ephemeral bool   // exit EphemeralGrace after the last client leaves
	Getenv    func(string) string
	Logger    *slog.Logger
}

// Run serves until ctx ends (a signal) or, in ephemeral mode, the last client leaves.
// It returns nil after a graceful shutdown.
func Run(ctx context.Context, opts Options) error {
	getenv, log := opts.Getenv, opts.Logger
	if getenv == nil {
		getenv = os.Getenv
	}
	if log == nil {
		log = slog.Default()
	}
	dirs, err := endpoint.ResolveDirs(opts.ConfigDir, getenv)
	if err != nil {
		return err
	}
	if err := dirs.Ensure(); err != nil {
		return err
	}
	cfg, err := config.Load(dirs.ConfigDir)
	if err != nil {
		return err
	}
	catalog, err := session.BuildCatalog(cfg, dirs.DataDir, getenv)
	if err != nil {
		return err
	}
	pairings, err := auth.OpenPairings(filepath.Join(dirs.DataDir, auth.PairingsFile))
	if err != nil {
		return err
	}
	manager := newNotifier(getenv, log)
	addr := endpoint.Address(dirs, getenv)
	ln, err := listen(addr, log)
	if err != nil {
		return err
	}
	addr = ln.Path() // an inherited socket's own path
	// After Listen: holding the endpoint's lock, this daemon alone writes the data dir.
	// A pairing write a crash interrupted may have left its temporary file
	// (docs/protocol.md, "Storage failures").
	if removed, err := pairings.RemoveTemp(); err != nil {
		log.Warn("a pairing write interrupted earlier left a temporary file that cannot be removed", "err", err)
	} else if removed {
		log.Info("removed the temporary file of a pairing write interrupted earlier")
	}
	if n, err := wss.RemoveTemps(dirs.DataDir); err != nil {
		log.Warn("a WSS certificate write interrupted earlier left a temporary file that cannot be removed", "err", err)
	} else if n > 0 {
		log.Info("removed the temporary files of a WSS certificate write interrupted earlier", "files", n)
	}
	st, err := store.Open(filepath.Join(dirs.DataDir, "sessions.db"), store.Options{Keep: cfg.RPC.ReplayEvents})
	if err != nil {
		ln.Close()
		return err
	}
	defer st.Close()
	removeUploadTemps(ctx, cfg, dirs.DataDir, st, log)
	// The MCP servers start when a turn or tools/list first needs them, and stop
	// (deferred) after the sessions and connections ended.
	servers := mcp.NewManager(log)
	defer servers.Close()
	servers.Configure(mcp.FromConfig(cfg, dirs.DataDir, getenv))
	tel, err := startTelemetry(cfg, dirs.DataDir, servers, getenv, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer tel.close(log) // after the sessions: their last spans are sent
	var live *config.Live
	// The memories' full-text index is checked (made again if missing or damaged)
	// before anything can search it.
	memories := memory.New(memory.Options{Store: st, Logger: log, Getenv: getenv,
		Config: func() config.Config { return live.Current() }})
	if err := memories.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	sessions := session.NewManager(catalog, session.Options{Logger: log, Store: st, MCP: servers, Memory: memories,
		ReplayBytes: int64(cfg.RPC.ReplayBytes),
		Telemetry:   metrics.Telemetry(tel.metrics, tel.tracer),
		OnLagged:    tel.metrics.Lagged,
		ClientToolTimeout: func() time.Duration {
			return time.Duration(live.Current().RPC.ClientToolTimeoutSecs) * time.Second
		}})
	// Every config write prepares the agent views of its complete candidate before
	// anything is written (a candidate the views refuse is refused), and installs
	// them once the file and the live config are committed.
	live = config.NewLive(cfg, config.LiveOptions{
		Dir:    dirs.ConfigDir,
		Logger: log,
		Views: func(candidate config.Config) (func(), error) {
			next, err := session.BuildCatalog(candidate, dirs.DataDir, getenv)
			if err != nil {
				return nil, err
			}
			return func() {
				sessions.SetCatalog(next)
				sessions.SetReplayBytes(int64(candidate.RPC.ReplayBytes))
				servers.Configure(mcp.FromConfig(candidate, dirs.DataDir, getenv))
			}, nil
		},
	})
	tel.sessions = sessions

	var cert wss.Certificate
	if cfg.WSS.Enabled {
		if cert, err = wss.LoadCertificate(dirs.DataDir, cfg.WSS.CertPath, cfg.WSS.KeyPath); err != nil {
			ln.Close()
			return err
		}
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var clients rpc.ClientTracker
	if opts.Ephemeral {
		clients = newEphemeral(EphemeralGrace, log, func() {
			log.Info("last client left; ephemeral daemon exiting")
			stop()
		})
	}
	srv := rpc.NewServer(rpc.Config{
		DataDir:        dirs.DataDir,
		Endpoint:       addr,
		MaxConnections: cfg.RPC.MaxLocalConnections,
		OutboundFrames: cfg.RPC.OutboundFrames,
		OutboundBytes:  cfg.RPC.OutboundBytes,
		DaemonUID:      os.Getuid(),
		Clients:        clients,
		Sessions:       sessions,
		Store:          st,
		Logger:         log,
		Config:         live,
		Pairings:       pairings,
		Fingerprint:    cert.Fingerprint,
		MCP:            servers,
		Memory:         memories,
		Metrics:        tel.metrics,
	})
	if err := tel.serve(cfg, log); err != nil {
		ln.Close()
		return err
	}
	var remote *wss.Listener
	if cfg.WSS.Enabled {
		remote, err = wss.Listen(wss.Config{
			Addr:        net.JoinHostPort(cfg.WSS.Bind, strconv.Itoa(cfg.WSS.Port)),
			Certificate: cert,
			Serve: func(f jsonrpc.Framer, remoteAddr string) {
				srv.Serve(f, rpc.Peer{Label: "wss:" + remoteAddr, UID: -1, PID: -1, Remote: true})
			},
			AllowedOrigins: func() []string { return live.Current().WSS.AllowedOrigins },
			Logger:         log,
		})
		if err != nil {
			ln.Close()
			return fmt.Errorf("starting the WSS listener: %w", err)
		}
		log.Info("serving WSS", "addr", remote.Addr().String(), "fingerprint", cert.Fingerprint)
	}
	log.Info("serving", "endpoint", addr, "configDir", dirs.ConfigDir, "dataDir", dirs.DataDir,
		"pid", os.Getpid(), "ephemeral", opts.Ephemeral)

	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		acceptLoop(ctx, ln, srv, log)
	}()
	manager.notify("READY=1")

	<-ctx.Done()
	log.Info("shutting down")
	manager.notify("STOPPING=1")
	// Stop accepting first, then end the connections, then remove the socket: the
	// listener's Close removes it only while the path still holds our own inode.
	closeErr := ln.Close()
	<-accepting
	if remote != nil {
		remote.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// Running turns end with stopReason "cancelled"; their prompts are answered
	// before the connections close.
	if err := sessions.Shutdown(sctx); err != nil {
		log.Warn("turns still running at exit", "err", err)
	}
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("connections still open at exit", "err", err)
	}
	if remote != nil {
		// The closing handshakes of the WebSocket connections srv just closed.
		if err := remote.Wait(sctx); err != nil {
			log.Warn("WSS connections still closing at exit", "err", err)
		}
	}
	if closeErr != nil {
		return fmt.Errorf("closing %s: %w", addr, closeErr)
	}
	log.Info("stopped")
	return nil
}

// acceptLoop hands each accepted connection to the server. Temporary failures (out of
// file descriptors) back off instead of spinning.
func acceptLoop(ctx context.Context, ln *endpoint.Listener, srv *rpc.Server, log *slog.Logger) {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			log.Warn("accept failed; retrying", "err", err, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		go func() {
			p := endpoint.PeerOf(nc)
			srv.ServeStream(nc, rpc.Peer{Label: p.Label, UID: p.UID, PID: p.PID})
		}()
	}
}
