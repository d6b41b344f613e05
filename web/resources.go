package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Errors a ResourceBrowser returns: no such server (or one the
// principal may not see) and no such resource answer 404; a server that
// is there but declares no resources capability (ErrNoResources) lists
// no resources, with a note that says so.
var (
	ErrUnknownServer   = errors.New("web: unknown server")
	ErrUnknownResource = errors.New("web: unknown resource")
	ErrNoResources     = errors.New("web: the server offers no resources")
)

// ResourceList is the answer of GET /resources/{server} for a server
// that offers no resources; a server that does answers its own
// resources/list result.
type ResourceList struct {
	Resources []json.RawMessage `json:"resources"`
	// Note says why the list is empty.
	Note string `json:"note,omitempty"`
}

// errNoBrowser answers /resources/{server} of an API with no
// ResourceBrowser.
var errNoBrowser = fmt.Errorf("%w: this service browses no upstream resources", ErrUnknownServer)

func (a *API) serveResources(w http.ResponseWriter, r *http.Request) {
	if a.o.Resources == nil {
		a.answerResource(w, nil, errNoBrowser)
		return
	}
	server := r.PathValue("server")
	res, err := a.o.Resources.ListResources(r.Context(), principal(r), server, r.URL.Query().Get("cursor"))
	if errors.Is(err, ErrNoResources) {
		// a configured server with tools only: nothing to browse, which
		// is no error
		writeJSON(w, http.StatusOK, ResourceList{Resources: []json.RawMessage{},
			Note: fmt.Sprintf("server %q offers no resources (it does not declare MCP's resources capability)", server)})
		return
	}
	a.answerResource(w, res, err)
}

// serveResourceServers answers {"servers": [...]}: the servers the
// caller may browse, or none when the ResourceBrowser cannot say (or
// there is none), so the UI asking on load meets no error.
func (a *API) serveResourceServers(w http.ResponseWriter, r *http.Request) {
	sl, ok := a.o.Resources.(ResourceServerLister)
	if !ok {
		writeJSON(w, http.StatusOK, map[string][]string{"servers": {}})
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
		a.answerResource(w, nil, errNoBrowser)
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
	case errors.Is(err, ErrUnknownServer), errors.Is(err, ErrUnknownResource), errors.Is(err, ErrNoResources):
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
