// Package metrics owns what the daemon tells an operator about its health (see
// docs/protocol.md, "Metrics and traces"): the Prometheus collectors behind
// metrics/scrape and the opt-in [metrics] listen HTTP listener, and the
// OpenTelemetry spans of turns, model calls and tool calls exported over OTLP/HTTP
// when [telemetry] otlp_endpoint is set.
//
// The daemon builds one Metrics and hands it to the packages that report to it:
// rpc (calls, connections), the feed through session (readers detached as
// lagged: session.Options.OnLagged), session and agent (turns, model and tool
// calls, through agent.Telemetry). There is no package-level state: two daemons in
// one process (the tests) keep two registries.
//
// What it must never do: take a session's lock (gauges are atomics the session
// layer keeps, or files stat'ed at scrape), put a prompt, an output, a path, a
// token or a session id in a label or a span attribute, or make a turn wait for a
// collector (spans wait in a bounded queue and are dropped, with a warning at most
// once a minute, when the collector is slow or away).
package metrics
