package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpx-dev/mcpx/auth"
)

// ResourceBrowser lists and reads an upstream server's MCP resources on
// behalf of a principal (the gateway implements it). Results are MCP
// resources/list and resources/read results as JSON.
type ResourceBrowser interface {
	ListResources(ctx context.Context, p auth.Principal, server, cursor string) (json.RawMessage, error)
	ReadResource(ctx context.Context, p auth.Principal, server, uri string) (json.RawMessage, error)
}

// ResourceServerLister is implemented by a ResourceBrowser that can say
// which servers a principal may browse; GET /resources answers
// {"servers": [...]} from it (the UI's server list).
type ResourceServerLister interface {
	ResourceServers(ctx context.Context, p auth.Principal) ([]string, error)
}

// Errors a ResourceBrowser returns for a 404: no such server (or one the
// principal may not see), no such resource.
var (
	ErrUnknownServer   = errors.New("web: unknown server")
	ErrUnknownResource = errors.New("web: unknown resource")
)

func (a *API) serveResources(w http.ResponseWriter, r *http.Request) {
	if a.o.Resources == nil {
		http.NotFound(w, r)
		return
	}
	res, err := a.o.Resources.ListResources(r.Context(), principal(r), r.PathValue("server"), r.URL.Query().Get("cursor"))
	a.answerResource(w, res, err)
}

func (a *API) serveResourceServers(w http.ResponseWriter, r *http.Request) {
	sl, ok := a.o.Resources.(ResourceServerLister)
	if !ok {
		http.NotFound(w, r)
		return
	}
	names, err := sl.ResourceServers(r.Context(), principal(r))
	if err != nil {
		a.log.Warn("listing resource servers failed", "error", err)
		http.Error(w, "upstream error", http.StatusBadGateway)
		return
	}
	if names == nil {
		names = []string{}
	}
	writeJSON(w, http.StatusOK, map[string][]string{"servers": names})
}

func (a *API) serveResourceRead(w http.ResponseWriter, r *http.Request) {
	if a.o.Resources == nil {
		http.NotFound(w, r)
		return
	}
	uri := r.URL.Query().Get("uri")
	if uri == "" {
		http.Error(w, "want ?uri=", http.StatusBadRequest)
		return
	}
	res, err := a.o.Resources.ReadResource(r.Context(), principal(r), r.PathValue("server"), uri)
	a.answerResource(w, res, err)
}

func (a *API) answerResource(w http.ResponseWriter, res json.RawMessage, err error) {
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(res)
	case errors.Is(err, ErrUnknownServer), errors.Is(err, ErrUnknownResource):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, auth.ErrRateLimited):
		var rl *auth.RateLimitError
		if errors.As(err, &rl) {
			rl.WriteHTTP(w)
			return
		}
		http.Error(w, err.Error(), http.StatusTooManyRequests)
	default:
		a.log.Warn("resource request failed", "error", err)
		http.Error(w, "upstream error", http.StatusBadGateway)
	}
}
