// Package web is `zeroclaw web`: a client of the daemon that serves the embedded web
// app (static/, go:embed, no build step) and bridges each browser tab's WebSocket
// (/rpc, one JSON-RPC message per text message) to a local daemon connection of
// that tab's own, so that a tab speaks the daemon's protocol exactly, uploads
// included (docs/protocol.md, "The web client").
//
// It owns the login (a token printed at start, traded for an HttpOnly cookie; a
// pairing token off loopback, passed on as initialize's authToken), the Origin
// check and the response headers (a strict Content-Security-Policy). It never
// interprets the protocol beyond that: it does not hold sessions, keep updates or
// answer for the daemon, and a tab that stops reading is lagged by the daemon like
// any client, because each tab is a connection of its own.
package web
