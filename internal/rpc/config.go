package rpc

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"log/slog"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// The config family (docs/protocol.md, "Configuration", "config/set" and
// "config/set-many"), and the pairing family (pairing.go).

// configMethods returns the config and pairing methods. A Server built without a
// config store or pairings gets in-memory ones here, before it serves: the
// defaults, nothing persisted.
func (s *Server) configMethods() []methodRow {
	if s.cfg.Config == nil {
		s.cfg.Config = config.NewLive(config.Default(), config.LiveOptions{Logger: s.log})
	}
	if s.cfg.Pairings == nil {
		s.cfg.Pairings, _ = auth.OpenPairings("") // in memory: cannot fail
	}
	return []methodRow{
		{name: "config/get", grant: auth.ConfigRead, handler: s.configGet},
		// and every path, checked under the write lock
		{name: "config/set", grant: auth.ConfigUpdate, handler: s.configSet},
		{name: "config/set-many", grant: auth.ConfigUpdate, handler: s.configSetMany},
	}
}

type getParams struct {
	Prop *string `json:"prop"`
}

type getResult struct {
	Prop  string         `json:"prop"`
	Value jsontext.Value `json:"value"`
}

// configGet answers one property, or the whole configuration; secrets masked.
func (s *Server) configGet(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p getParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	cfg := s.cfg.Config.Current()
	if p.Prop == nil {
		return cfg.MaskedJSON(), nil
	}
	v, err := cfg.Get(*p.Prop)
	if err != nil {
		return nil, configError(err, false)
	}
	return getResult{Prop: *p.Prop, Value: v}, nil
}

type setEntry struct {
	Prop  *string        `json:"prop"`
	Value jsontext.Value `json:"value"`
}

type setResult struct {
	Prop string `json:"prop"`
	Set  bool   `json:"set"`
}

func (s *Server) configSet(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p setEntry
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Prop == nil:
		return nil, missing("prop")
	case len(p.Value) == 0:
		return nil, missing("value")
	}
	if err := s.writeConfig(ctx, c, []config.Entry{{Prop: *p.Prop, Value: p.Value}}, false); err != nil {
		return nil, err
	}
	return setResult{Prop: *p.Prop, Set: true}, nil
}

type setManyParams struct {
	Sets []setEntry `json:"sets"`
}

type setManyResult struct {
	Props []string `json:"props"`
	Set   bool     `json:"set"`
}

func (s *Server) configSetMany(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p setManyParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if n := len(p.Sets); n < 1 || n > config.MaxEntries {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: sets must hold 1 to 256 entries",
			map[string]any{"param": "sets", "reason": "count", "limit": config.MaxEntries})
	}
	entries := make([]config.Entry, len(p.Sets))
	props := make([]string, len(p.Sets))
	for i, e := range p.Sets {
		param := ""
		switch {
		case e.Prop == nil:
			param = "prop"
		case len(e.Value) == 0:
			param = "value"
		}
		if param != "" {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: every entry of sets needs prop and value",
				map[string]any{"param": "sets", "index": i, "missing": param})
		}
		entries[i] = config.Entry{Prop: *e.Prop, Value: e.Value}
		props[i] = *e.Prop
	}
	if err := s.writeConfig(ctx, c, entries, true); err != nil {
		return nil, err
	}
	return setManyResult{Props: props, Set: true}, nil
}

// writeConfig authorizes and commits one write. It takes the config write lock
// first, then holds the set of paired tokens still, and only then resolves the
// caller's authority: a policy change or a revocation that lands while the write
// waits is seen, and none can land between the check and the commit. One forbidden
// path refuses the whole write before anything is staged.
func (s *Server) writeConfig(ctx context.Context, c *connState, entries []config.Entry, batch bool) error {
	tx, err := s.cfg.Config.Begin(ctx)
	if err != nil {
		return err // the connection is closing; nobody hears the answer
	}
	defer tx.End()
	defer s.cfg.Pairings.Hold()()

	a, err := c.authority(tx.Current())
	if err != nil {
		return err
	}
	if !a.Has(auth.ConfigUpdate) {
		return forbidden(auth.ConfigUpdate)
	}
	for i, e := range entries {
		if !a.MayWrite(e.Prop) {
			data := map[string]any{"grant": auth.ConfigUpdate, "prop": e.Prop, "reason": "path_not_allowed"}
			if batch {
				data["index"] = i
			}
			return jsonrpc.NewError(protocol.CodeForbidden, "forbidden: this principal may not change "+e.Prop, data)
		}
	}
	if err := tx.Commit(entries); err != nil {
		var ce *config.CommitError
		if errors.As(err, &ce) {
			c.log.Error("config write failed; nothing changed", "err", ce.Err)
		}
		return configError(err, batch)
	}
	props := make([]string, len(entries))
	for i, e := range entries {
		props[i] = e.Prop
	}
	// Property names only: values may be secrets.
	c.log.Info("config updated", "principal", a.Principal.ID, slog.Any("props", props))
	return nil
}

// configError turns the config store's errors into JSON-RPC errors: -32602 naming
// the property (and, in a batch, the entry's zero-based index), or -32603 when the
// file could not be written.
func configError(err error, batch bool) error {
	var ce *config.CommitError
	if errors.As(err, &ce) {
		return jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: the configuration could not be saved; nothing was changed", nil)
	}
	index, prop := -1, ""
	var ee *config.EntryError
	if errors.As(err, &ee) {
		index, prop = ee.Index, ee.Prop
	}
	data := map[string]any{}
	if batch && index >= 0 {
		data["index"] = index
	}
	var pe *config.PropError
	var ve *config.ValidationError
	switch {
	case errors.As(err, &pe):
		data["prop"], data["reason"] = pe.Prop, pe.Reason
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, pe.Msg, data)
	case errors.As(err, &ve):
		if prop != "" {
			data["prop"] = prop
		}
		data["key"], data["reason"] = ve.Key, "invalid_config"
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid config: "+ve.Msg, data)
	}
	return err
}
