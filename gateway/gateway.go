// Package gateway is mcpx's MCP proxy: it fronts real MCP servers (stdio
// subprocesses, streamable HTTP, SSE), offers their tools, resources and
// prompts to one MCP client per session (over stdio or streamable HTTP),
// and passes every tool result through the engine, so base64 blobs and
// oversized text reach the model as artifact references.
//
// The gateway speaks JSON-RPC itself (gateway/internal/jsonrpc), with
// its own Streamable HTTP and legacy SSE client transports
// (gateway/internal/upstreamhttp), and keeps every upstream message raw:
// tool schemas, _meta, structured content and annotations are forwarded
// byte for byte. Its parts are rooms that each own their state and lock
// (docs/design.md, "The gateway's rooms"): upstream supervision
// (internal/upstream), the downstream transports (internal/transport),
// the sessions (internal/session), the router of tools, resource URIs and
// prompts (internal/router), resources (internal/resources),
// subscriptions and listen streams (internal/subscriptions), the artifact
// room (internal/artifacts) and output-schema validation
// (internal/schema). This package builds them, hands the sessions their
// Rooms, and routes what the upstreams say to them (upstream_host.go);
// the settings live in gateway/config.
//
//	gw, _ := gateway.New(gateway.Options{Servers: servers, Engine: engine.Options{Store: st}})
//	gw.Start(ctx)
//	defer gw.Close(ctx)
//	gw.ServeStdio(ctx, os.Stdin, os.Stdout)
package gateway

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/semaphore"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/resources"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/schema"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
)

// defaultStartWait is the least a client's initialize waits for an
// upstream that is still connecting; an upstream's start-up timeout
// (ServerOptions.StartupTimeout) makes the wait longer.
const defaultStartWait = 15 * time.Second

// Options configure a Gateway.
type Options struct {
	// Servers are the upstreams by name; disabled entries are skipped.
	// None is valid: the gateway then offers the artifact tools only, as
	// an artifact service does (mcpx serve --listen with no servers).
	Servers map[string]config.ServerConfig
	// Users is who may call the gateway: the principals its HTTP
	// listener admits. A stdio server without mcpx.instances runs a
	// process per principal ("per_user") when more than one may, so no
	// user drives another's browser or sees its roots, and one shared
	// process otherwise (ServerConfig.InstanceModeFor). Defaults to one
	// user.
	Users config.Users
	// Engine configures the engine every result passes through. Store is
	// required; the gateway sets Reader to its upstreams, so the
	// resourcelink layer can read their resources. Its Linker, when set, also makes the
	// capability URLs of argument rewriting.
	Engine engine.Options
	// Logger is the parent logger; the gateway logs under "gateway".
	// Defaults to a null logger.
	Logger hclog.Logger
	// Version is reported as serverInfo.version. Defaults to "dev".
	Version string
	// StartWait is the least a client's initialize (and a first request
	// without one) waits for an upstream's first connection attempt; it
	// waits for each upstream up to the larger of StartWait and the
	// upstream's start-up timeout, counted from Start. Defaults to 15 s
	// (defaultStartWait).
	StartWait time.Duration
	// Limits bound message sizes, buffers, sessions and logging; the zero
	// value means every default (see Limits).
	Limits config.Limits
	// StdioReadsStore says the stdio client is the user who started the
	// gateway (as for `mcpx serve` and `mcpx wrap`, launched by an MCP
	// client on this machine): it may read every artifact that no
	// authenticated principal made, in any session, as `mcpx artifacts
	// get` could read the store's folder. One-shot clients (a process per
	// call) then read back what an earlier call was told about. Defaults
	// to false: a stdio session reads its own artifacts only, since
	// ServeStdio may serve any byte stream.
	StdioReadsStore bool
	// Secrets are values the config took from the environment (${VAR}),
	// by variable name: they are masked in every error sent to a client.
	// Defaults to none.
	Secrets map[string]string
	// WaitForClientCapabilities makes each upstream's initialize (not its
	// start) wait for the first client's capabilities and declare only
	// what that client has of what mcpx relays, so a server that offers
	// tools by capability offers what it would offer that client
	// directly (session.Clients). Set it when a client will connect
	// (mcpx serve and wrap over stdio do); not for a listener, whose
	// readiness would wait for a client. Defaults to false: upstreams
	// initialize at Start, declaring sampling and elicitation.
	WaitForClientCapabilities bool
	// OnSessionEnd, when set, is called with a session's id after the
	// session closed (not for stateless requests, which have no session
	// to end): mcpx serve drops the session's artifacts there when
	// retention's drop_on_session_end is set. It runs on the closing
	// goroutine; keep it short. Defaults to nil.
	OnSessionEnd func(sessionID string)
	// Profiles are client profiles by the prefix of clientInfo.name they
	// match (session.Profiles); they add to and replace the built-in ones
	// (claude-code: 25,000 tokens and images; claude-ai: images; copilot
	// and github-copilot: 10,000 characters; goose: 200,000 characters)
	// and "default" applies to any other client. Each call's result is
	// fitted to its client's profile: budget, images. Defaults to the
	// built-in profiles only.
	Profiles map[string]config.Profile
	// ArtifactTools configure the artifacts_query and artifacts_search
	// tools and resources/read of text artifacts (artifacts.Service).
	// The zero value means every default.
	ArtifactTools config.ArtifactToolsOptions
	// Observer is told of every tools/call when it ends (metrics).
	// Defaults to nil: nothing is timed.
	Observer observe.Observer
	// TracerProvider, when set, traces each tools/call as a span with a
	// child per engine step (unless Engine.Tracer is set), continuing
	// the request's W3C trace context (_meta.traceparent, or the HTTP
	// traceparent header) and sending the call's upstream in _meta.
	// Defaults to nil: no spans; a request's trace context still goes
	// upstream.
	TracerProvider trace.TracerProvider
	// OnResourceUpdated, when set, is told of every resource an upstream
	// says was updated, once per principal subscribed to it (Scope's
	// tenant and user; an empty Scope when nobody is). mcpx serve
	// publishes it to the HTTP API's event bus. It runs on the
	// upstream's reading goroutine: keep it quick. Defaults to nil.
	OnResourceUpdated func(observe.ResourceUpdate)
}

// Gateway is the MCP proxy. It is safe for concurrent use by any number of
// sessions. It builds the rooms (the router, resources, subscriptions,
// the artifact room, the sessions' registry, see session.Rooms), hands
// them to the sessions its transports open, and routes what the
// upstreams say to them (upstream_host.go).
type Gateway struct {
	log       hclog.Logger
	eng       *engine.Engine
	st        store.Store
	rooms     *session.Rooms
	artTools  config.ArtifactToolsOptions  // Options.ArtifactTools, defaults applied
	limits    config.Limits                // defaults applied
	large     *semaphore.Weighted          // bytes of large requests in flight
	stdioOwns bool                         // Options.StdioReadsStore
	onUpdated func(observe.ResourceUpdate) // Options.OnResourceUpdated
	quit      chan struct{}                // closed by Close
	// startLogEvery is how often a starting upstream says it is still
	// starting (0: the upstream's default; tests lower it)
	startLogEvery time.Duration
	closed        atomic.Bool
}

// New checks the options and builds a Gateway; Start connects it.
func New(o Options) (*Gateway, error) {
	g := &Gateway{log: o.Logger, quit: make(chan struct{})}
	if err := o.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.limits = o.Limits.WithDefaults()
	profs, err := session.NewProfiles(o.Profiles)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if err := o.ArtifactTools.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.artTools = o.ArtifactTools.WithDefaults()
	g.large = semaphore.NewWeighted(g.limits.LargeRequestBytes)
	mem := o.Engine.Memory
	if mem == nil {
		mem = membudget.New(g.limits.MaxWorkBytes)
	}
	if g.log == nil {
		g.log = hclog.NewNullLogger()
	}
	g.log = g.log.Named("gateway")
	version := o.Version
	if version == "" {
		version = "dev"
	}
	startWait := o.StartWait
	if startWait <= 0 {
		startWait = defaultStartWait
	}
	g.stdioOwns, g.onUpdated = o.StdioReadsStore, o.OnResourceUpdated
	eo := o.Engine
	var tracer trace.Tracer
	if o.TracerProvider != nil {
		tracer = o.TracerProvider.Tracer(session.TracerName)
		if eo.Tracer == nil {
			eo.Tracer = session.StepTracer(tracer)
		}
	}
	ups := router.NewUpstreams(startWait)
	eo.Reader = ups
	eo.Memory = mem
	// summaries point the model at the tools by the names it is offered
	eo.QueryTools = engine.QueryTools{Query: g.artTools.QueryName, Search: g.artTools.SearchName}
	if eo.Logger == nil {
		eo.Logger = o.Logger
	}
	if err := checkNoServerLayers(o.Servers); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if eo.SchemaValidator == nil {
		eo.SchemaValidator = schema.NewValidator(g.log.Named("schema"), g.limits)
	}
	eng, err := engine.New(eo)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.eng, g.st = eng, eo.Store
	sessions := session.NewRegistry(ups)
	clients := session.NewClients(ups, sessions, o.WaitForClientCapabilities)
	for name, cfg := range o.Servers {
		if err := cfg.Validate(name); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		if cfg.Disabled {
			g.log.Info("server disabled in config", "server", name)
			continue
		}
		mode, why := cfg.InstanceModeFor(o.Users)
		if mode != cfg.InstanceMode() {
			g.log.Info("instances: "+mode, "server", name, "why", why)
		}
		cfg.Mcpx.Instances = mode
		ups.Add(upstream.New(upstream.Options{
			Name:        name,
			Config:      cfg,
			Limits:      g.limits,
			Log:         g.log,
			Version:     version,
			StartWait:   startWait,
			FirstClient: clients.Wait(),
			Host:        upstreamHost{g},
		}))
	}
	art := artifacts.New(artifacts.Options{Engine: eng, Store: eo.Store, Linker: eo.Linker, Memory: mem, Tools: g.artTools, Log: g.log})
	uris := router.NewURIs(ups, g.log)
	subs := subscriptions.NewTable(ups, uris)
	cache := resources.NewCache(eo.Store)
	g.rooms = &session.Rooms{
		Ups: ups,
		// The artifact tools are listed before any upstream is ready,
		// and when none ever is: the store answers without them.
		Tools:    router.NewTools(ups, art.Tools(), g.log),
		Prompts:  router.NewPrompts(ups, uris, g.log),
		Res:      resources.New(ups, uris, art, eng, cache, g.log),
		Cache:    cache,
		Subs:     subs,
		Listen:   subscriptions.NewListeners(ups, subs, g.limits, g.log),
		Art:      art,
		Sessions: sessions,
		Clients:  clients,
		Progress: session.NewProgress(),
		Bridges:  &session.Bridges{},
		Profiles: profs,
		Errors:   session.NewErrors(g.log, o.Secrets),
		Observer: o.Observer,
		Tracer:   tracer,
		Log:      g.log,
		Version:  version,
		OnEnd:    o.OnSessionEnd,
	}
	return g, nil
}

// checkNoServerLayers refuses layer options in mcpServers.NAME.mcpx:
// they live in the engine's pipeline (Options.Engine.Config.Servers),
// their one home, where the engine merges every level once. mcpx moves
// an old config's there when it loads it (for one release, with a
// warning); a host that sets them here would otherwise see them ignored.
func checkNoServerLayers(servers map[string]config.ServerConfig) error {
	for _, name := range sortedKeys(servers) {
		m := servers[name].Mcpx
		at := "mcpServers." + name + ".mcpx"
		if len(m.Layers) > 0 {
			return fmt.Errorf("%s.layers: layer options live in the pipeline: set pipeline.servers.%s.layers (engine.Config.Servers)", at, name)
		}
		if m.AutoReadIfSizeUnderBytes != 0 {
			return fmt.Errorf("%s.auto_read_if_size_under_bytes: layer options live in the pipeline: set pipeline.servers.%s.layers.resourcelink.auto_read_if_size_under_bytes (engine.Config.Servers)", at, name)
		}
		for _, tool := range sortedKeys(m.Tools) {
			if len(m.Tools[tool].Layers) > 0 {
				return fmt.Errorf("%s.tools.%s.layers: layer options live in the pipeline: set pipeline.servers.%s.tools.%s.layers (engine.Config.Servers)", at, tool, name, tool)
			}
		}
	}
	return nil
}

// Engine returns the gateway's engine.
func (g *Gateway) Engine() *engine.Engine { return g.eng }

// Start connects every upstream in the background; one that fails is
// retried with backoff and does not stop the others. It returns at once.
func (g *Gateway) Start(ctx context.Context) { g.rooms.Ups.Start(ctx, g.startLogEvery) }

// WaitReady waits until every upstream has made its first connection
// attempt, or ctx ends.
func (g *Gateway) WaitReady(ctx context.Context) { g.rooms.Ups.WaitReady(ctx) }

// Status describes every upstream, sorted by name.
func (g *Gateway) Status() []Status { return g.rooms.Ups.Status() }

// Close ends every session and upstream (stdio processes get their stdin
// closed, then SIGTERM, then SIGKILL: see Limits.StopGrace) and the
// engine. It is idempotent.
func (g *Gateway) Close(ctx context.Context) error {
	if !g.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(g.quit)
	g.rooms.Sessions.CloseAll()
	wait := time.Duration(g.limits.StopGrace+g.limits.KillGrace) + 2*time.Second
	if !g.rooms.Ups.Stop(ctx, wait) {
		g.log.Warn("upstreams did not stop", "after", wait)
	}
	return g.eng.Close(ctx)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
