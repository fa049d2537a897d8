//go:build unix

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The metrics of docs/protocol.md, "Metrics and traces", read from the real daemon
// after real turns: at /metrics on the [metrics] listen listener, and by
// metrics/scrape over the socket.

// metricsAddr waits for the daemon's "serving metrics" line and returns its address.
func metricsAddr(t *testing.T, d *daemon) string {
	t.Helper()
	re := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)
	text, ok := d.stderr.await(func(s string) bool { return re.MatchString(s) }, d.exited, 30*time.Second)
	if !ok {
		t.Fatalf("no \"serving metrics\" line in the log:\n%s", text)
	}
	return re.FindStringSubmatch(text)[1]
}

// exposition is a parsed Prometheus text exposition: each family's type, and each
// sample's value by its line's name and labels as written.
type exposition struct {
	types   map[string]string
	samples map[string]float64
	labels  map[string][]string // every label value, by label name
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func parseExposition(t *testing.T, text string) exposition {
	t.Helper()
	e := exposition{types: map[string]string{}, samples: map[string]float64{}, labels: map[string][]string{}}
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			e.types[name] = typ
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a sample line: %q", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		e.samples[m[1]+m[2]] = v
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			e.labels[p[1]] = append(e.labels[p[1]], p[2])
		}
	}
	return e
}

// want checks the sample written as key (name{labels}, labels in sorted order).
func (e exposition) want(t *testing.T, key string, want float64) {
	t.Helper()
	got, ok := e.samples[key]
	if !ok || got != want {
		t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
	}
}

// specTypes are the families of docs/protocol.md, "Metrics and traces", by type.
var specTypes = map[string]string{
	"zeroclaw_llm_requests_total": "counter", "zeroclaw_tokens_input_total": "counter",
	"zeroclaw_tokens_output_total": "counter", "zeroclaw_tool_calls_total": "counter",
	"zeroclaw_rpc_requests_total": "counter", "zeroclaw_turns_total": "counter",
	"zeroclaw_lagged_total":          "counter",
	"zeroclaw_turn_duration_seconds": "histogram", "zeroclaw_llm_first_token_seconds": "histogram",
	"zeroclaw_tool_duration_seconds": "histogram", "zeroclaw_rpc_duration_seconds": "histogram",
	"zeroclaw_active_sessions": "gauge", "zeroclaw_connections": "gauge",
	"zeroclaw_mcp_servers": "gauge", "zeroclaw_store_bytes": "gauge",
	"go_goroutines": "gauge", "go_memstats_heap_alloc_bytes": "gauge",
}

// allowedLabels are every label the exposition may carry.
var allowedLabels = map[string]bool{
	"provider": true, "model": true, "success": true, "tool": true, "method": true, "outcome": true,
	"stop_reason": true, "transport": true, "state": true, "file": true, "le": true,
	"version": true, "quantile": true, // go_info's and go_gc_duration_seconds'
}

func TestMetricsAfterRealTurnsOnTheListenerAndByScrape(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[metrics]\nlisten = \"127.0.0.1:0\"\n\n[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)
	addr := metricsAddr(t, d)
	c := dial(t, d.socket)
	c.initialize()
	sid := c.must("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	const secret = "hush-prompt-7f3a"
	prompts := []string{secret + " plain", secret + `\n/tool list_dir {}`, secret + `\n/tool list_dir {}\n/tool no_such_tool {}`}
	for _, p := range prompts {
		r := c.must("session/prompt", `{"sessionId":"`+sid+`","prompt":"`+p+`"}`)
		if r["stopReason"] != "end_turn" {
			t.Fatalf("turn %q: %v", p, r)
		}
	}
	c.rpc("no/such/method", "")

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s, %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	scraped := c.must("metrics/scrape", "")
	if ct, _ := scraped["contentType"].(string); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("metrics/scrape contentType %q", ct)
	}
	for name, text := range map[string]string{"/metrics": string(body), "metrics/scrape": scraped["text"].(string)} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			e := parseExposition(t, text)
			for fam, typ := range specTypes {
				if e.types[fam] != typ {
					t.Errorf("%s: type %q, want %q", fam, e.types[fam], typ)
				}
			}
			e.want(t, `zeroclaw_turns_total{stop_reason="end_turn"}`, 3)
			e.want(t, `zeroclaw_turn_duration_seconds_count`, 3)
			// One model call for the plain turn, two for each turn with tools.
			e.want(t, `zeroclaw_llm_requests_total{model="echo",provider="echo",success="true"}`, 5)
			// The calls that return only tool calls stream nothing: no first token.
			e.want(t, `zeroclaw_llm_first_token_seconds_count`, 3)
			e.want(t, `zeroclaw_tool_calls_total{success="true",tool="list_dir"}`, 2)
			e.want(t, `zeroclaw_tool_calls_total{success="false",tool="unknown"}`, 1)
			e.want(t, `zeroclaw_tool_duration_seconds_count{tool="list_dir"}`, 2)
			e.want(t, `zeroclaw_rpc_requests_total{method="session/prompt",outcome="ok"}`, 3)
			e.want(t, `zeroclaw_rpc_duration_seconds_count{method="session/prompt"}`, 3)
			e.want(t, `zeroclaw_rpc_requests_total{method="session/new",outcome="ok"}`, 1)
			e.want(t, `zeroclaw_rpc_requests_total{method="unknown",outcome="method_not_found"}`, 1)
			e.want(t, `zeroclaw_active_sessions`, 1)
			e.want(t, `zeroclaw_connections{transport="unix"}`, 1)
			e.want(t, `zeroclaw_lagged_total`, 0)
			e.want(t, `zeroclaw_mcp_servers{state="failed"}`, 0)
			// The echo provider counts words: the prompts' on each turn's first call.
			if in := e.samples["zeroclaw_tokens_input_total"]; in < 3 {
				t.Errorf("zeroclaw_tokens_input_total = %v, want at least one word a turn", in)
			}
			if out := e.samples["zeroclaw_tokens_output_total"]; out < 3 {
				t.Errorf("zeroclaw_tokens_output_total = %v", out)
			}
			if db := e.samples[`zeroclaw_store_bytes{file="db"}`]; db <= 0 {
				t.Errorf(`zeroclaw_store_bytes{file="db"} = %v, want the database's size`, db)
			}
			if _, ok := e.samples["go_goroutines"]; !ok {
				t.Error("no go_goroutines: the Go runtime's collectors are missing")
			}
			// Label hygiene: known label names only, and no value carries the prompt,
			// the session id, a path or anything beyond a short name.
			for label, values := range e.labels {
				if !allowedLabels[label] {
					t.Errorf("unexpected label %q (values %q)", label, values)
				}
				for _, v := range values {
					if strings.Contains(v, "hush") || strings.Contains(v, sid) || strings.Contains(v, h) ||
						strings.Contains(v, "/") && label != "method" || len(v) > 64 {
						t.Errorf("label %s=%q carries what it must not", label, v)
					}
				}
			}
			if strings.Contains(text, secret) || strings.Contains(text, sid) {
				t.Error("the exposition carries the prompt or the session id")
			}
		})
	}
}

func TestARestrictedPrincipalIsRefusedMetricsScrape(t *testing.T) {
	h := home(t)
	writeConfig(t, h, fmt.Sprintf(`[security]
trust_daemon_uid = false

[permission_profiles.chat]
grants = ["sessions:execute", "sessions:read"]
agents = ["default"]

[users.me]
uid = %d
permission_profiles = ["chat"]
`, os.Getuid()))
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	_, e := c.rpc("metrics/scrape", "")
	wantError(t, e, -32012, "grant", "system:read")
}

func TestBadMetricsListenAndOTLPEndpointAreRefusedNamingTheKey(t *testing.T) {
	for _, tt := range []struct{ toml, key string }{
		{"[metrics]\nlisten = \"nowhere\"\n", "metrics.listen"},
		{"[metrics]\nlisten = \"example.com:9464\"\n", "metrics.listen"},
		{"[metrics]\nlisten = \"127.0.0.1:99999\"\n", "metrics.listen"},
		{"[telemetry]\notlp_endpoint = \"ftp://user:pw@collector\"\n", "telemetry.otlp_endpoint"},
		{"[telemetry]\notlp_endpoint = \"collector:4318\"\n", "telemetry.otlp_endpoint"},
	} {
		h := home(t)
		writeConfig(t, h, tt.toml)
		_, stderr, err := run(t, command(h, "daemon"))
		if exitCode(err) == 0 || !strings.Contains(stderr, tt.key) {
			t.Errorf("%q: exit %d, stderr %q: want a refusal naming %s", tt.toml, exitCode(err), stderr, tt.key)
		}
		if strings.Contains(stderr, "user:pw") {
			t.Errorf("the refusal repeats the URL's credentials: %q", stderr)
		}
	}

	d := startDaemon(t, home(t), nil)
	c := dial(t, d.socket)
	c.initialize()
	for _, set := range []struct{ prop, value string }{
		{"metrics.listen", `"nowhere"`},
		{"telemetry.otlp_endpoint", `"ftp://collector"`},
	} {
		_, e := c.rpc("config/set", `{"prop":"`+set.prop+`","value":`+set.value+`}`)
		if e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e), set.prop) {
			t.Errorf("config/set %s %s: %v, want -32602 naming the key", set.prop, set.value, e)
		}
	}
	r := c.must("config/set", `{"prop":"metrics.listen","value":"127.0.0.1:9464"}`)
	if r["set"] != true {
		t.Errorf("config/set of a good address: %v", r)
	}
}

func TestAMetricsPortAlreadyTakenFailsTheStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	h := home(t)
	writeConfig(t, h, fmt.Sprintf("[metrics]\nlisten = %q\n", taken.Addr().String()))
	_, stderr, err := run(t, command(h, "daemon"))
	if exitCode(err) == 0 || !strings.Contains(stderr, "metrics listener") ||
		!strings.Contains(stderr, "metrics.listen") || !strings.Contains(stderr, "address already in use") {
		t.Fatalf("exit %d, stderr %q: want a start failure naming the listener, the key and why", exitCode(err), stderr)
	}
}
