package web

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/wss"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// serveRPC bridges one tab's WebSocket to a daemon connection of its own
// (docs/protocol.md, "The web client"): each text message from the tab is one line
// to the daemon, each line from the daemon one text message to the tab. The tab's
// messages obey the socket's limits (wss.Framer: 8 MiB, else frame_too_large and
// the close). Frames for the tab wait in its outbox (1 MiB) while the browser is
// behind; a tab that stops reading fills it and then stops the bridge reading its
// daemon connection only: the daemon lags that connection as it lags any slow
// client, and a write to the tab that stalls 30 s closes both.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request, l login) {
	if !s.sameOrigin(r) {
		s.log.Info("web upgrade refused: foreign origin", "peer", r.RemoteAddr, "origin", r.Header.Get("Origin"))
		http.Error(w, "forbidden: foreign origin", http.StatusForbidden)
		return
	}
	dctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	nc, err := s.dial(dctx)
	cancel()
	if err != nil {
		s.log.Info("web tab: no daemon", "err", err)
		http.Error(w, "no daemon answers: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	// The Origin was checked above, against the scheme as well as the host.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		nc.Close()
		return
	}
	s.tabs.Add(1)
	defer s.tabs.Done()
	tab := wss.NewFramer(ws)
	daemon := jsonrpc.NewNDJSON(nc)
	s.log.Info("web tab connected", "peer", r.RemoteAddr)
	go tab.Keepalive(wss.PingAfter, wss.PongWait, nil)

	done := make(chan struct{})
	go func() {
		defer close(done)
		s.toTab(daemon, tab)
	}()
	reason := s.toDaemon(tab, daemon, l)
	nc.Close()
	<-done
	tab.Close()
	<-tab.Done()
	s.log.Info("web tab disconnected", "peer", r.RemoteAddr, "reason", reason)
}

// toTab copies the daemon's frames to the tab until either side ends, then closes
// the tab, which ends toDaemon. A reader takes the daemon's frames into the tab's
// outbox as they come; this goroutine writes them out at the tab's pace.
func (s *Server) toTab(daemon *jsonrpc.NDJSON, tab *wss.Framer) {
	ob := newOutbox()
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer ob.close()
		for {
			frame, err := daemon.ReadFrame()
			if err != nil || !ob.push(frame) {
				return
			}
		}
	}()
	for {
		frame, ok := ob.pop()
		if !ok {
			break
		}
		if err := tab.WriteFrame(frame); err != nil {
			ob.discard()
			break
		}
	}
	tab.Close() // ends toDaemon, which closes the daemon connection, which ends the reader
	<-read
}

// toDaemon copies the tab's messages to the daemon until either side ends.
func (s *Server) toDaemon(tab *wss.Framer, daemon *jsonrpc.NDJSON, l login) string {
	defer daemon.Close()
	for {
		msg, err := tab.ReadFrame()
		if err != nil {
			var fe *jsonrpc.FrameError
			if errors.As(err, &fe) {
				// As on the socket: one -32600 naming the limit, then the close.
				tab.WriteFrame(jsonrpc.AppendError(nil, jsonrpc.NullID, fe.Reply()))
				return fe.Reason
			}
			return err.Error()
		}
		line, perr := oneLine(msg)
		if perr != nil {
			tab.WriteFrame(jsonrpc.AppendError(nil, jsonrpc.NullID, perr))
			continue
		}
		if l.authToken != "" {
			line = withAuthToken(line, l.authToken)
		}
		if err := daemon.WriteFrame(line); err != nil {
			return err.Error()
		}
	}
}

// oneLine makes msg one NDJSON line: a message is JSON, whose only line breaks are
// whitespace between tokens (a raw one inside a string is invalid), so one with a
// line break is compacted, and one that is not valid JSON then answers -32700 as
// the daemon would, instead of reaching it as several lines.
func oneLine(msg []byte) ([]byte, *jsonrpc.Error) {
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return msg, nil
	}
	v := jsontext.Value(bytes.Clone(msg))
	if err := v.Compact(); err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeParseError, "parse error: "+err.Error(), nil)
	}
	return v, nil
}

// withAuthToken sets initialize's authToken to the tab's pairing token (off
// loopback): the daemon then applies that token's principal to the connection,
// which may only narrow the bridge's own. Any authToken the tab sent is replaced;
// other frames pass unchanged, and so does a frame the daemon will refuse anyway.
func withAuthToken(line []byte, token string) []byte {
	if !bytes.Contains(line, []byte(`"initialize"`)) {
		return line
	}
	var env map[string]jsontext.Value
	if json.Unmarshal(line, &env) != nil {
		return line
	}
	var method string
	if json.Unmarshal(env["method"], &method) != nil || method != "initialize" {
		return line
	}
	params := map[string]jsontext.Value{}
	if p, ok := env["params"]; ok && json.Unmarshal(p, &params) != nil {
		return line
	}
	delete(params, "auth_token")
	tok, _ := json.Marshal(token)
	params["authToken"] = tok
	env["params"], _ = json.Marshal(params)
	out, err := json.Marshal(env, json.Deterministic(true))
	if err != nil {
		return line
	}
	return out
}

// checkPairing asks the daemon whether token is a pairing token it accepts: an
// initialize with it as authToken on a connection of its own.
func (s *Server) checkPairing(ctx context.Context, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := s.dial(ctx)
	if err != nil {
		return fmt.Errorf("no daemon answers: %w", err)
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	f := jsonrpc.NewNDJSON(nc)
	tok, _ := json.Marshal(token)
	req := []byte(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zeroclaw-web","version":""},"authToken":` + string(tok) + `},"id":1}`)
	if err := f.WriteFrame(req); err != nil {
		return err
	}
	resp, err := f.ReadFrame()
	if err != nil {
		return err
	}
	var m struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp, &m); err != nil {
		return err
	}
	if m.Error != nil {
		return errors.New(m.Error.Message)
	}
	return nil
}
