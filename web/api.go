package web

// The HTTP API of the artifact service (issue 19): everything a person's
// browser or a host not written in Go needs, behind auth.Authenticator.
//
//	GET|HEAD /artifacts/{id}          bytes: a signed URL, or a bearer token and scope
//	GET /artifacts/{id}/meta          the ArtifactRef, content summary, last access, expiry
//	GET /artifacts?cursor=…           the caller's artifacts, newest first, a page at a time
//	GET /events                       server-sent events, filtered to the caller, Last-Event-ID
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
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

// Defaults of Limits.
const (
	// DefaultEventBuffer is how many recent events are kept for
	// Last-Event-ID resumption.
	DefaultEventBuffer = 1024
	// DefaultSubscriberBuffer is how many events may wait for one slow
	// SSE client before it is cut off (it resumes with Last-Event-ID).
	DefaultSubscriberBuffer = 256
	// DefaultMaxEventStreams caps the open GET /events streams.
	DefaultMaxEventStreams = 256
	// DefaultEventKeepAlive is the interval of SSE comments on an idle
	// stream (proxies close silent connections).
	DefaultEventKeepAlive = 25 * time.Second
	// DefaultMaxTransformBytes caps a POST /transform body.
	DefaultMaxTransformBytes = 64 << 20
	// DefaultTrackedOwners is how many artifacts' scopes the event bus
	// remembers, so an eviction (which the store reports by id only)
	// reaches its owner.
	DefaultTrackedOwners = 100_000
	// DefaultPreviewBytes is how much of a text, JSON or HTML artifact the
	// UI loads for its preview (a Range request); the download is whole.
	DefaultPreviewBytes = 1 << 20
)

// Limits bound the API's memory and streams. Zero fields take defaults.
type Limits struct {
	// EventBuffer is how many events are kept for resumption. Defaults to
	// DefaultEventBuffer (1024).
	EventBuffer int `json:"event_buffer,omitempty"`
	// SubscriberBuffer is how many events may queue for one SSE client.
	// Defaults to DefaultSubscriberBuffer (256).
	SubscriberBuffer int `json:"subscriber_buffer,omitempty"`
	// MaxEventStreams caps the open /events streams; more answer 503.
	// Defaults to DefaultMaxEventStreams (256).
	MaxEventStreams int `json:"max_event_streams,omitempty"`
	// EventKeepAlive is the SSE keep-alive interval ("25s"). Defaults to
	// DefaultEventKeepAlive.
	EventKeepAlive store.Duration `json:"event_keep_alive,omitempty"`
	// MaxTransformBytes caps a POST /transform body; larger answer 413.
	// Defaults to DefaultMaxTransformBytes (64 MiB).
	MaxTransformBytes int64 `json:"max_transform_bytes,omitempty"`
	// TrackedOwners is how many artifacts' owners the event bus keeps for
	// eviction events. Defaults to DefaultTrackedOwners (100,000).
	TrackedOwners int `json:"tracked_owners,omitempty"`
	// PreviewBytes is how much of a text, JSON or HTML artifact the UI at
	// GET / loads to preview it. Defaults to DefaultPreviewBytes (1 MiB).
	PreviewBytes int64 `json:"preview_bytes,omitempty"`
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.EventBuffer, DefaultEventBuffer)
	def(&l.SubscriberBuffer, DefaultSubscriberBuffer)
	def(&l.MaxEventStreams, DefaultMaxEventStreams)
	def(&l.TrackedOwners, DefaultTrackedOwners)
	if l.EventKeepAlive <= 0 {
		l.EventKeepAlive = store.Duration(DefaultEventKeepAlive)
	}
	if l.MaxTransformBytes <= 0 {
		l.MaxTransformBytes = DefaultMaxTransformBytes
	}
	if l.PreviewBytes <= 0 {
		l.PreviewBytes = DefaultPreviewBytes
	}
	return l
}

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
	// Ready is asked by /readyz besides the store; nil: no upstreams.
	Ready Readiness
	// Metrics serves GET /metrics (Prometheus text; promhttp over the
	// host's registry), authenticated as the other endpoints; nil
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

// visible reports whether artifact id exists and p may read it. Either
// way an answer of false is a 404: nobody learns that another's artifact
// exists.
func (a *API) visible(ctx context.Context, p auth.Principal, id string) (bool, error) {
	if p.Local {
		ok, err := a.o.Store.Exists(ctx, id)
		return ok, notFoundIsFalse(err)
	}
	if p.User == "" {
		return false, nil
	}
	in, err := a.o.Store.InScope(ctx, id, p.Scope())
	if err != nil || !in {
		return false, notFoundIsFalse(err)
	}
	if p.Tenant == "" {
		// A filter's empty tenant matches every tenant: a user without
		// one must not read a same-named user's artifact of a tenant.
		// The ref carries the first scope its filter contains.
		ref, err := a.o.Store.Stat(ctx, id)
		if err != nil {
			return false, notFoundIsFalse(err)
		}
		return ref.Scope.TenantID == "", nil
	}
	return true, nil
}

func notFoundIsFalse(err error) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
		return nil
	}
	return err
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
