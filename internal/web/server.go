package web

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
)

//go:embed static
var staticFS embed.FS

// Options build a Server.
type Options struct {
	// Dial opens a new connection to the daemon (one per tab).
	Dial func(ctx context.Context) (net.Conn, error)
	// Remote: the server listens off loopback; login is by a pairing token.
	Remote bool
	// TLS: the server is reached over https (the cookie is Secure, the Origin https).
	TLS bool
	// Token is the login token printed at start (loopback); "" makes a random one.
	Token  string
	Logger *slog.Logger
}

// Server serves the app, the login and the bridge. It is an http.Handler.
type Server struct {
	dial   func(ctx context.Context) (net.Conn, error)
	remote bool
	tls    bool
	token  string
	log    *slog.Logger
	static fs.FS

	mu     sync.Mutex
	logins map[string]login // cookie value → login

	tabs sync.WaitGroup
}

// NewServer returns a Server for o.
func NewServer(o Options) *Server {
	s := &Server{dial: o.Dial, remote: o.Remote, tls: o.TLS, token: o.Token, log: o.Logger, logins: make(map[string]login)}
	if s.token == "" {
		s.token = newSecret()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.static, _ = fs.Sub(staticFS, "static")
	return s
}

// Token is the login token of the URL printed at start (loopback only).
func (s *Server) Token() string { return s.token }

// public is what is served without a login: the login page and what it loads.
var public = map[string]bool{"login.js": true, "login.css": true}

// ServeHTTP routes: / is the app with a login and the login page (401) without;
// /login trades a token for the cookie; /rpc is a tab's WebSocket; the app's other
// files need the login. Every response carries the headers of headers().
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	headers(w)
	if !s.remote && !loopbackHost(r.Host) {
		// On loopback only loopback names: a page whose name was rebound to
		// 127.0.0.1 (DNS rebinding) is its own origin and must not pass for ours.
		http.Error(w, "forbidden: this server answers only to a loopback host name", http.StatusForbidden)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	switch {
	case name == "login":
		s.serveLogin(w, r)
		return
	case public[name]:
		s.serveFile(w, r, name, http.StatusOK)
		return
	}
	l, ok := s.authed(r)
	if !ok {
		if name == "" && r.Method == http.MethodGet {
			s.serveFile(w, r, "login.html", http.StatusUnauthorized)
			return
		}
		http.Error(w, "unauthorized: log in first (open the link zeroclaw web printed)", http.StatusUnauthorized)
		return
	}
	switch name {
	case "":
		s.serveFile(w, r, "index.html", http.StatusOK)
	case "rpc":
		s.serveRPC(w, r, l)
	case "auth":
		w.WriteHeader(http.StatusNoContent) // the app asks whether its cookie still holds
	case "login.html", "index.html":
		http.NotFound(w, r)
	default:
		s.serveFile(w, r, name, http.StatusOK)
	}
}

// contentTypes of the app's files, by extension.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8",
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, name string, status int) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, err := fs.ReadFile(s.static, name)
	ct, known := contentTypes[path.Ext(name)]
	if err != nil || !known {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		w.Write(b)
	}
}

// Wait waits for every tab's bridge to end (after the listener closed).
func (s *Server) Wait() { s.tabs.Wait() }
