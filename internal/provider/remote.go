package provider

import (
	"context"
	jsonv1 "encoding/json"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// remote is what the openai and anthropic kinds share: the HTTP client, the
// whole-call timeout, and the translation of every failure into an *Error a user
// can act on. One path for both kinds, so both fail alike.
type remote struct {
	name    string
	kind    string
	baseURL string // as configured, possibly "" (the kind's default)
	model   string
	key     string // never in a message
	keyEnv  string
	timeout time.Duration
	http    *http.Client

	retries int                                   // at most this many attempts after the first
	jitter  func(max time.Duration) time.Duration // a random duration in [0, max]
}

func newRemote(cfg Config, key string) *remote {
	r := &remote{
		name:    cfg.Name,
		kind:    cfg.Kind,
		baseURL: cfg.BaseURL,
		model:   cfg.Model,
		key:     key,
		keyEnv:  cfg.APIKeyEnv,
		timeout: cfg.Timeout,
		http:    cfg.HTTPClient,
		retries: max(cfg.MaxRetries, 0),
		jitter:  func(d time.Duration) time.Duration { return rand.N(d + 1) },
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.http == nil {
		var rt http.RoundTripper = http.DefaultTransport
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			rt = t.Clone()
		}
		r.http = &http.Client{Transport: rt}
	}
	return r
}

// endpoint is the base URL for messages: the configured one or the kind's default,
// without any password.
func (r *remote) endpoint() string {
	if r.baseURL != "" {
		return redactURL(r.baseURL)
	}
	if r.kind == "anthropic" {
		return DefaultAnthropicBaseURL
	}
	return DefaultOpenAIBaseURL
}

// modelFor is the request's model, else the entry's default.
func (r *remote) modelFor(req Request) (string, error) {
	if req.Model != "" {
		return req.Model, nil
	}
	if r.model != "" {
		return r.model, nil
	}
	return "", r.fail(0, fmt.Sprintf("no model: set providers.%s.model or the agent's model", r.name), nil)
}

// errCallTimeout is the cause of a call's context when the call's own timeout ends it.
var errCallTimeout = errors.New("model call timed out")

// callContext bounds one call by the provider's timeout.
func (r *remote) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, r.timeout, errCallTimeout)
}

func (r *remote) fail(status int, msg string, err error) *Error {
	if err != nil && r.key != "" && strings.Contains(err.Error(), r.key) {
		// Whatever quoted the key is not kept, not even behind Unwrap.
		err = errors.New(r.redact(err.Error()))
	}
	return &Error{Provider: r.name, Status: status, Message: r.redact(msg), Err: err}
}

// connFailure is a failure to reach the server or a stream cut off.
func (r *remote) connFailure(msg string, err error) *Error {
	e := r.fail(0, msg, err)
	e.connection = true
	return e
}

// redact removes the API key from text that came from elsewhere (a response body,
// an error of the network stack).
func (r *remote) redact(s string) string {
	if r.key != "" {
		s = strings.ReplaceAll(s, r.key, "[redacted]")
	}
	return s
}

// Failure phases: before the response headers, or while reading the stream.
const (
	phaseConnect = iota
	phaseStream
)

// classify turns err from a call made under callCtx (derived from ctx) into what
// Stream returns: ctx.Err() when the caller's ctx ended, else an *Error.
func (r *remote) classify(ctx, callCtx context.Context, phase int, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if context.Cause(callCtx) == errCallTimeout {
		return r.fail(0, fmt.Sprintf("no complete answer from %s within %s; the call was abandoned, try again", r.endpoint(), r.timeout), errCallTimeout)
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var se *statusError
	if errors.As(err, &se) {
		return r.statusFailure(se)
	}
	var ne net.Error
	isNet := errors.As(err, &ne)
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return r.connFailure(fmt.Sprintf("cannot connect to %s: connection refused; is the server running?", r.endpoint()), err)
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return r.fail(0, fmt.Sprintf("cannot connect to %s: host %q not found; check providers.%s.base_url", r.endpoint(), dnsErr.Name, r.name), err)
	case errors.As(err, &dnsErr):
		return r.connFailure(fmt.Sprintf("cannot connect to %s: looking up %q failed: %s", r.endpoint(), dnsErr.Name, dnsErr.Err), err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errStreamEnded),
		phase == phaseStream && (isNet || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return r.connFailure("the stream ended early; try again", err)
	case isNet && ne.Timeout():
		return r.connFailure(fmt.Sprintf("the connection to %s timed out; try again", r.endpoint()), err)
	case isNet || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF):
		return r.connFailure(fmt.Sprintf("the request to %s failed: %s", r.endpoint(), trimErr(err)), err)
	}
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	if errors.As(err, &syn) || errors.As(err, &sem) || isV1JSONError(err) || errors.Is(err, errMalformed) {
		return r.fail(0, fmt.Sprintf("the provider sent a malformed event: %s", trimErr(err)), err)
	}
	return r.fail(0, fmt.Sprintf("the model call failed: %s", trimErr(err)), err)
}

// errStreamEnded reports a stream whose body ended before the model's answer did.
var errStreamEnded = errors.New("the stream ended before the answer was complete")

// errMalformed reports an event that parsed but made no sense.
var errMalformed = errors.New("malformed event")

// statusFailure describes an HTTP error status.
func (r *remote) statusFailure(se *statusError) *Error {
	code := se.code
	detail := ""
	if m := r.redact(se.message); m != "" {
		detail = ": " + m
	}
	var msg string
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		// The provider's words say why (a wrong key, no access to the model, a
		// disabled account), but may quote part of the key: that part is masked.
		where := fmt.Sprintf("providers.%s.api_key", r.name)
		if r.keyEnv != "" {
			where += " or $" + r.keyEnv
		}
		status := fmt.Sprintf("HTTP %d", code)
		if m := se.message; m != "" { // redacted and masked by statusDoer
			status += ": " + m
		}
		if r.key == "" {
			msg = fmt.Sprintf("the provider wants an API key (%s); set %s", status, where)
		} else {
			msg = fmt.Sprintf("the API key was refused (%s); check %s", status, where)
		}
	case code == http.StatusNotFound:
		msg = fmt.Sprintf("the model %q or the base URL %s is wrong (HTTP 404)%s; check the model name and providers.%s.base_url",
			se.model, r.endpoint(), detail, r.name)
	case code == http.StatusTooManyRequests:
		msg = "rate limited (HTTP 429)" + detail
		if se.retryAfter != "" {
			msg += "; retry after " + retryAfterText(se.retryAfter)
		} else {
			msg += "; wait a moment and try again"
		}
	case code >= 500:
		msg = fmt.Sprintf("the provider failed (HTTP %d)%s; try again", code, detail)
	default:
		msg = fmt.Sprintf("the provider refused the request (HTTP %d)%s", code, detail)
	}
	return r.fail(code, msg, se)
}

// keyHint is how long a piece of the key must be for maskKey to hide the word
// that holds it.
const keyHint = 4

// maskKey hides what an auth error quotes of the key: OpenAI, for one, answers
// "Incorrect API key provided: sk-proj-****…MNoA". A word (the text between spaces
// and quotes) is masked when it holds a run of asterisks or begins or ends like the
// key (at least keyHint characters of it).
func (r *remote) maskKey(s string) string {
	words := strings.FieldsFunc(s, func(c rune) bool { return c == ' ' || c == '"' || c == '\'' || c == '`' })
	for _, w := range words {
		core := strings.TrimRight(w, ".,;:!?)")
		if core == "" || core == "[redacted]" {
			continue
		}
		if strings.Contains(core, "***") || r.sharesKey(core) {
			s = strings.ReplaceAll(s, core, "[redacted]")
		}
	}
	return s
}

// sharesKey reports whether w begins with the key's first keyHint characters or
// ends with its last ones (beyond a common prefix such as "sk-").
func (r *remote) sharesKey(w string) bool {
	k := r.key
	if len(k) < 2*keyHint || len(w) < keyHint {
		return false
	}
	n := keyHint
	if strings.HasPrefix(k, "sk-") {
		n += 3
	}
	return len(w) >= n && strings.HasPrefix(w, k[:n]) || strings.HasSuffix(w, k[len(k)-keyHint:])
}

// retryAfterText renders a Retry-After value: seconds as "30s", a date as it is.
func retryAfterText(v string) string {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return (time.Duration(n) * time.Second).String()
	}
	return v
}

// statusError is an HTTP response with an error status, read and closed by
// statusDoer before either SDK sees it: both SDKs drop the Retry-After header.
type statusError struct {
	code       int
	retryAfter string
	message    string // the provider's own explanation, if it gave one
	model      string // the model the request named
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.code)
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}

// errorBodyMax bounds how much of an error response is read.
const errorBodyMax = 64 << 10

// statusDoer is the HTTP client both SDKs use: it turns an error status into a
// *statusError, and refuses an HTML page where an event stream belongs (a base URL
// that points at a web site rather than an API).
type statusDoer struct {
	r     *remote
	model string
}

func (d statusDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.r.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
			resp.Body.Close()
			return nil, d.r.fail(resp.StatusCode, fmt.Sprintf(
				"%s answered with a web page, not an API stream; check providers.%s.base_url", d.r.endpoint(), d.r.name), nil)
		}
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyMax))
	msg := d.r.redact(errorMessage(body))
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		msg = d.r.maskKey(msg) // not even behind Unwrap
	}
	return nil, &statusError{
		code:       resp.StatusCode,
		retryAfter: strings.TrimSpace(resp.Header.Get("Retry-After")),
		message:    msg,
		model:      d.model,
	}
}

// errorMessage extracts the explanation from an error body: {"error": {"message":
// …}} (OpenAI, Anthropic), {"error": "…"} (Ollama), {"message": …} (Mistral), the
// title of an HTML page (a proxy's), else short plain text.
func errorMessage(body []byte) string {
	var v struct {
		Error   jsontext.Value `json:"error"`
		Message string         `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return clip(inner.Message)
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return clip(s)
		case v.Message != "":
			return clip(v.Message)
		}
		return ""
	}
	s := strings.TrimSpace(string(body))
	if s == "" || !utf8.ValidString(s) {
		return ""
	}
	if strings.HasPrefix(s, "<") { // a proxy's error page: its title says it
		_, after, ok := strings.Cut(s, "<title>")
		title, _, closed := strings.Cut(after, "</title>")
		if !ok || !closed {
			return ""
		}
		return clip(html.UnescapeString(title))
	}
	return clip(s)
}

// clip keeps messages from providers to one readable line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = cutUTF8(s, 300) + "…"
	}
	return s
}

// trimErr is an error's text on one line.
func trimErr(err error) string {
	return clip(err.Error())
}

// redactURL hides a password in a URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

// isV1JSONError reports a decoding error of encoding/json, which both SDKs use.
func isV1JSONError(err error) bool {
	var syn *jsonv1.SyntaxError
	var typ *jsonv1.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// partialCall is a tool call being reassembled from a stream.
type partialCall struct {
	index      int    // the stream's index (openai) or content block index (anthropic)
	indexed    bool   // openai: the stream gave the index
	id         string // the provider's id, else one made up for the daemon (openai)
	providerID string // the provider's id exactly, "" when it gave none
	name       string
	args       strings.Builder
}

// toolCall completes c. Arguments must be one JSON object ("{}" when the model gave
// none): the agent hands them on as they are. truncated says the answer hit the
// token limit, the usual reason for cut-off arguments.
func (r *remote) toolCall(c *partialCall, truncated bool) (ToolCall, error) {
	raw := strings.TrimSpace(c.args.String())
	if raw == "" {
		raw = "{}"
	}
	v := jsontext.Value(raw)
	if v.Kind() != '{' || !v.IsValid() {
		msg := fmt.Sprintf("the model's arguments for the tool %q are not a JSON object", c.name)
		if truncated {
			msg += "; the answer was cut off at the token limit"
		}
		return ToolCall{}, r.fail(0, msg, errMalformed)
	}
	return ToolCall{ID: c.id, ProviderID: c.providerID, Name: c.name, Arguments: v}, nil
}

// argumentsText is a tool call's arguments for a request: "{}" when empty.
func argumentsText(v jsontext.Value) string {
	if len(strings.TrimSpace(string(v))) == 0 {
		return "{}"
	}
	return string(v)
}

// emptySchema describes a tool without arguments.
const emptySchema = `{"type":"object","properties":{}}`

// schemaText is a tool's parameter schema for a request.
func schemaText(v jsontext.Value) string {
	if len(strings.TrimSpace(string(v))) == 0 {
		return emptySchema
	}
	return string(v)
}

// toolResultText is a tool result's content for a request: both APIs refuse an
// empty one.
func toolResultText(m Message) string {
	if m.Text == "" {
		return "(no output)"
	}
	return m.Text
}
