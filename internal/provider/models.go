package provider

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Lister is a provider that can list the models its server offers (docs/protocol.md,
// "models/list"): GET <base_url>/models for the openai kind (whose base URL ends in
// /v1), GET <base_url>/v1/models for anthropic. Echo does not list: its one model is
// EchoModel.
type Lister interface {
	ListModels(ctx context.Context) ([]string, error)
}

// EchoModel is the echo provider's one model; EchoContextWindow its context window
// in words.
const (
	EchoModel         = "echo"
	EchoContextWindow = 32768
)

// listTimeout bounds one listing of a provider's models.
const listTimeout = 15 * time.Second

// maxListPages bounds the pages of a paginated listing (anthropic's has_more).
const maxListPages = 20

// ListModels implements Lister.
func (p *openAI) ListModels(ctx context.Context) ([]string, error) {
	base := p.r.baseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	return p.r.listModels(ctx, strings.TrimSuffix(base, "/")+"/models", func(h http.Header) {
		if p.r.key != "" {
			h.Set("Authorization", "Bearer "+p.r.key)
		}
	})
}

// ListModels implements Lister.
func (p *anthropicProvider) ListModels(ctx context.Context) ([]string, error) {
	base := p.r.baseURL
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	return p.r.listModels(ctx, strings.TrimSuffix(base, "/")+"/v1/models", func(h http.Header) {
		h.Set("x-api-key", p.r.key)
		h.Set("anthropic-version", "2023-06-01")
	})
}

// modelPage is a page of either kind's model list: {"data": [{"id"}]}, with
// anthropic's has_more and last_id.
type modelPage struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
	HasMore bool   `json:"has_more"`
	LastID  string `json:"last_id"`
}

// listModels GETs the model list at endpoint, following anthropic's pagination.
// A failure is an *Error that names neither the key nor a password of the URL.
func (r *remote) listModels(ctx context.Context, endpoint string, auth func(http.Header)) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var out []string
	after := ""
	for range maxListPages {
		u := endpoint
		if after != "" {
			u += "?after_id=" + url.QueryEscape(after)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, r.fail(0, "listing models: "+r.redact(err.Error()), nil)
		}
		auth(req.Header)
		resp, err := r.http.Do(req)
		if err != nil {
			return nil, r.connFailure("listing models: "+r.redact(trimErr(err)), nil)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			return nil, r.connFailure("listing models: "+r.redact(trimErr(err)), nil)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, r.fail(resp.StatusCode, fmt.Sprintf("listing models: HTTP %d: %s", resp.StatusCode, r.redact(errorMessage(body))), nil)
		}
		var page modelPage
		if err := json.Unmarshal(body, &page, json.RejectUnknownMembers(false)); err != nil {
			return nil, r.fail(resp.StatusCode, "listing models: the answer is not a model list", nil)
		}
		for _, m := range page.Data {
			if m.ID != "" {
				out = append(out, m.ID)
			}
		}
		if !page.HasMore || page.LastID == "" {
			return out, nil
		}
		after = page.LastID
	}
	return out, nil
}
