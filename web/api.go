package web

// The HTTP API of the artifact service: everything a person's
// browser or a host not written in Go needs, behind auth.Authenticator.
//
//	GET|HEAD /artifacts/{id}          bytes: a signed URL, or a bearer token and scope
//	GET /artifacts/{id}/meta          the ArtifactRef, content summary, last access, expiry
//	GET /artifacts?cursor=…           the caller's artifacts, newest first, a page at a time
//	GET /events                       server-sent events, filtered to the caller, Last-Event-ID
//	GET /calls                        the caller's recent calls, from the events buffer (calls.go)
//	GET /resources/{server}           an upstream's resources (ResourceBrowser)
//	GET /resources/{server}/read?uri= one resource
//	POST /transform?server=&tool=     the engine as a service: raw result in, rewritten out
//	GET /metrics                      Prometheus text (APIOptions.Metrics)
//	GET /healthz, GET /readyz         liveness; upstreams connected and store writable
//	GET /, GET /ui/{file}             the UI (ui.go): live artifacts, previews, resources
//	GET /.well-known/oauth-protected-resource  RFC 9728 metadata
//
// Another principal's artifact answers 404 everywhere, as a missing one.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
)

// Transformer runs a raw tool result through the engine; *engine.Engine
// is one.
type Transformer interface {
	Transform(ctx context.Context, c engine.Call, raw []byte) (*engine.Result, error)
}

// Readiness reports whether the upstreams are connected; nil when ready,
// else an error that says which is not.
type Readiness interface {
	Ready(ctx context.Context) error
}

// APIOptions configure an API. Store, Signer and Auth are required.
type APIOptions struct {
	Store  store.Store
	Signer *Signer
	Auth   *auth.Authenticator
	// Events feeds GET /events. Defaults to a new bus (NewEventBus).
	Events *EventBus
	// Resources serves /resources; nil answers 404 there.
	Resources ResourceBrowser
	// Transformer serves POST /transform; nil answers 404 there.
	Transformer Transformer
	// Observer is told of each POST /transform when it ends, as the
	// gateway tells it of each tools/call (telemetry.Metrics counts both
	// alike); nil: nobody is.
	Observer observe.Observer
	// Ready is asked by /readyz besides the store; nil: no upstreams.
	Ready Readiness
	// Metrics serves GET /metrics (Prometheus text from the host's
	// registry), authenticated as the other endpoints; nil
	// answers 404 there.
	Metrics http.Handler
	// Retention gives each artifact's expiry; the zero value keeps
	// everything (no expiry reported).
	Retention store.Retention
	Limits    Limits
	Logger    hclog.Logger
}

// API is the artifact service's HTTP surface. Safe for concurrent use.
type API struct {
	o        APIOptions
	l        Limits
	download *Handler
	streams  chan struct{} // one token per open /events stream
	log      hclog.Logger
}

// NewAPI checks o and returns the API.
func NewAPI(o APIOptions) (*API, error) {
	if o.Store == nil || o.Signer == nil || o.Auth == nil {
		return nil, errors.New("web: APIOptions.Store, Signer and Auth are required")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	l := o.Limits.WithDefaults()
	if o.Events == nil {
		o.Events = NewEventBus(l)
	}
	return &API{o: o, l: l, download: NewHandler(o.Store, o.Signer, o.Logger),
		streams: make(chan struct{}, l.MaxEventStreams), log: o.Logger.Named("api")}, nil
}

// Events returns the bus GET /events serves: publish to it.
func (a *API) Events() *EventBus { return a.o.Events }

// Register mounts every endpoint on mux (beside /mcp, say).
func (a *API) Register(mux *http.ServeMux) {
	authed := a.o.Auth.Middleware
	guard := a.o.Auth.Guard
	mux.Handle("GET /artifacts/{id}", guard(http.HandlerFunc(a.serveArtifact)))
	mux.Handle("GET /artifacts/{id}/meta", authed(http.HandlerFunc(a.serveMeta)))
	mux.Handle("GET /artifacts", authed(http.HandlerFunc(a.serveList)))
	mux.Handle("GET /events", authed(http.HandlerFunc(a.serveEvents)))
	mux.Handle("GET /calls", authed(http.HandlerFunc(a.serveCalls)))
	mux.Handle("GET /resources/{server}", authed(http.HandlerFunc(a.serveResources)))
	mux.Handle("GET /resources/{server}/read", authed(http.HandlerFunc(a.serveResourceRead)))
	mux.Handle("POST /transform", authed(http.HandlerFunc(a.serveTransform)))
	mux.Handle("GET /{$}", guard(http.HandlerFunc(a.serveUI)))
	mux.Handle("GET /ui/{file}", guard(http.HandlerFunc(serveUIAsset)))
	mux.Handle("GET /resources", authed(http.HandlerFunc(a.serveResourceServers)))
	if a.o.Metrics != nil {
		mux.Handle("GET /metrics", authed(a.o.Metrics))
	}
	mux.Handle("GET /healthz", http.HandlerFunc(serveHealth))
	mux.Handle("GET /readyz", guard(http.HandlerFunc(a.serveReady)))
	meta := a.o.Auth.MetadataHandler()
	mux.Handle("GET "+auth.MetadataPath, meta)
	mux.Handle("GET "+auth.MetadataPath+"/{path...}", meta)
}

// Handler returns a mux with every endpoint.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	a.Register(mux)
	return mux
}

// principal is the caller Middleware authenticated.
func principal(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

// visible is the API's access check (auth.Principal.Holding, the same
// as the gateway's): artifact id as p may see it, under p's own first
// scope, whoever put the bytes first. Not ok is a 404 either way: nobody
// learns that another's artifact exists.
func (a *API) visible(ctx context.Context, p auth.Principal, id string) (store.Ref, bool, error) {
	return p.Holding(ctx, a.o.Store, id, nil)
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// notFound is the one answer for a missing artifact and another's.
func notFound(w http.ResponseWriter) { http.Error(w, "artifact not found", http.StatusNotFound) }

func (a *API) storeError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, store.ErrInvalidCursor) {
		http.Error(w, "invalid cursor", http.StatusBadRequest)
		return
	}
	a.log.Warn(what+" failed", "error", err)
	http.Error(w, "store error", http.StatusInternalServerError)
}
