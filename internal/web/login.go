package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json/v2"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CookieName is the login cookie: HttpOnly, SameSite=Strict, Secure over TLS.
const CookieName = "zeroclaw_web"

// csp is every response's Content-Security-Policy: scripts and styles only from
// this server (no inline script, no eval), connections only back to it.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// maxLoginBody bounds a login request's body.
const maxLoginBody = 4 << 10

// newSecret makes a random token for the login URL or a cookie.
func newSecret() string { return rand.Text() + rand.Text() }

// headers sets what every response carries.
func headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
}

// login is the tab's session: which pairing token (if any) its connections present.
type login struct {
	authToken string // "" on loopback: the tab is the bridge's own user
}

// authed returns the login of the request's cookie.
func (s *Server) authed(r *http.Request) (login, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return login{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logins[c.Value]
	return l, ok
}

// sameOrigin reports whether the request's Origin is this server's own: the scheme
// it is served over and the host the browser reached it by. A request without an
// Origin is refused too: browsers send one on every WebSocket upgrade and POST.
func (s *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host) && u.Path == "" && u.User == nil
}

// serveLogin trades a token for a cookie: on loopback the one printed at start, off
// it a pairing token, which the daemon must accept (an initialize with it as
// authToken) before the cookie is given.
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a token", http.StatusMethodNotAllowed)
		return
	}
	if !s.sameOrigin(r) {
		http.Error(w, "forbidden: foreign origin", http.StatusForbidden)
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxLoginBody+1))
	if err != nil || len(b) > maxLoginBody || json.Unmarshal(b, &body) != nil || body.Token == "" {
		http.Error(w, "bad login request: send {\"token\": \"…\"}", http.StatusBadRequest)
		return
	}
	var l login
	if s.remote {
		if err := s.checkPairing(r.Context(), body.Token); err != nil {
			s.log.Info("web login refused", "peer", r.RemoteAddr, "err", err)
			http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
			return
		}
		l.authToken = body.Token
	} else if subtle.ConstantTimeCompare([]byte(body.Token), []byte(s.token)) != 1 {
		s.log.Info("web login refused: wrong token", "peer", r.RemoteAddr)
		http.Error(w, "unauthorized: wrong token", http.StatusUnauthorized)
		return
	}
	cookie := newSecret()
	s.mu.Lock()
	if len(s.logins) >= maxLogins {
		for k := range s.logins { // forget one: a bounded map, never unbounded memory
			delete(s.logins, k)
			break
		}
	}
	s.logins[cookie] = l
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: cookie, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.tls,
	})
	s.log.Info("web login", "peer", r.RemoteAddr)
	w.WriteHeader(http.StatusNoContent)
}

// maxLogins bounds the cookies the server keeps.
const maxLogins = 1024

// loopback reports whether the listen address is on a loopback interface only.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	return loopbackName(host)
}

// loopbackHost reports whether a request's Host names a loopback address.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	return loopbackName(host)
}

func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
