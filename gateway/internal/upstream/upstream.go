// Package upstream supervises the gateway's upstream MCP servers: it
// starts a stdio server's process (with an allowlisted environment, in
// its own process group) or connects to a remote one over Streamable
// HTTP or SSE, runs the initialize handshake or, for a server that
// speaks only 2026-07-28, server/discover, keeps the tool list, opens a
// second, stateless connection (a lane) for 2026-07-28 clients where
// the server speaks that revision, holds subscriptions/listen open on
// it, and restarts what ends, with backoff. What it needs of the
// gateway (answers to the server's requests, its notifications, the
// clients' capabilities) it asks through Host, given at construction;
// it imports nothing of the gateway.
//
// One server is an Upstream, a facade over parts that each own one
// concern, its state and its lock, and know of each other only what
// they are given at construction (a sibling part, or a function):
//
//   - supervisor (supervisor.go): the shared connection, its state,
//     restarts with backoff, and what Status and Call report of it;
//   - handshake (handshake.go): how mcpx introduces itself as the
//     server's client: clientInfo, the capabilities it declares (the
//     first client's), initialize and server/discover;
//   - declared (declared.go): what the server declared of itself: its
//     initialize or server/discover result and its tool list;
//   - lanes (era.go, stdio_lane.go, stateless_only.go,
//     input_required.go): the 2026-07-28 connection beside the session,
//     or the only one of a server that speaks nothing older;
//   - Instances (instances.go): a pool's, a session's or a user's own
//     processes, and which process a call goes to;
//   - ListenStream (listen.go): subscriptions/listen on the lane;
//   - Callers (callers.go): the downstream requests with calls in
//     flight, and the server requests relayed for them.
//
// The Upstream composes them: Run keeps the shared connection up
// (connect.go makes each one), and Call and Start (call.go) take one
// request down its path: the lane, the stateless-only bridge, or the
// process Instances picks, each a conn (stdio_conn.go, http_conn.go).
package upstream

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// ProtocolVersion is the MCP version mcpx asks upstreams for. Many
// servers (server-everything among them) speak no newer one; servers that
// answer with another version mcp-go knows are accepted.
const ProtocolVersion = mcp.ProtocolVersion20251125

// Upstream states, as Status reports them.
const (
	StateStarting   = "starting"
	StateReady      = "ready"
	StateRestarting = "restarting"
	StateFailed     = "failed"
	StateClosed     = "closed"
)

// Host is what an upstream asks of the gateway that runs it, given at
// construction: the upstream knows no more of the gateway than this.
type Host interface {
	// Request answers a request u's server sent (ping, roots/list,
	// sampling, elicitation), relaying it to a client where it must:
	// the Caller of ctx when it has one, else one of from's (a process
	// of one session or principal asks only its owner; the zero Owner,
	// anyone the gateway can tie the request to).
	Request(ctx context.Context, u *Upstream, from Owner, method string, params json.RawMessage) (json.RawMessage, error)
	// Notification takes a notification u's server sent, in the order
	// sent, from a process of from (the zero Owner: one every client
	// may hear); it must not block for long.
	Notification(u *Upstream, from Owner, method string, params json.RawMessage)
	// Ready is called each time u is connected and its tools are
	// loaded.
	Ready(u *Upstream)
	// ClientCapabilities is what u declares to its server as its
	// client's capabilities now (see Options.FirstClient).
	ClientCapabilities(u *Upstream) json.RawMessage
}

// Options configure an Upstream.
type Options struct {
	// Name is the server's name in config; Config its entry.
	Name   string
	Config config.ServerConfig
	// Limits bound messages, buffers and server requests; defaults
	// applied.
	Limits config.Limits
	// Log is the parent logger; the upstream logs under "upstream".
	Log hclog.Logger
	// Version is mcpx's clientInfo.version upstream.
	Version string
	// StartWait is the least a client waits for the upstream at start:
	// past it, "still starting" is logged at warn.
	StartWait time.Duration
	// FirstClient, when not nil, is closed once the first client's
	// capabilities are known: the upstream's initialize waits for it
	// (unless Config declares its client capabilities itself).
	FirstClient <-chan struct{}
	// Host answers what the upstream asks of the gateway.
	Host Host
}

// Upstream supervises one configured server: it connects, initializes,
// caches the server's tool list, and restarts a stdio process that exits.
// It holds its parts (see the package doc) and takes each request down
// its path through them.
type Upstream struct {
	// Name and Config are the server's, from Options; Log is its logger.
	Name   string
	Config config.ServerConfig
	Log    hclog.Logger

	host   Host
	limits config.Limits
	life   *lifetime

	sup     *supervisor
	hs      *handshake
	decl    *declared
	lanes   *lanes
	inst    *Instances
	listen  *ListenStream
	callers *Callers
}

// New returns the supervisor of one server; Run connects it.
func New(o Options) *Upstream {
	log := o.Log.Named("upstream").With("server", o.Name)
	u := &Upstream{
		Name:    o.Name,
		Config:  o.Config,
		Log:     log,
		host:    o.Host,
		limits:  o.Limits,
		life:    &lifetime{},
		sup:     newSupervisor(o.Name, o.Config, o.StartWait, log),
		decl:    &declared{},
		callers: newCallers(o.Limits, log),
	}
	u.hs = newHandshake(o.Name, o.Config, o.Version, o.FirstClient, log, func() json.RawMessage {
		return u.host.ClientCapabilities(u)
	})
	u.lanes = newLanes(o.Name, o.Config, o.Limits, log, u.hs, u.decl, u.handlers(Owner{}, nil))
	u.inst = newInstances(o.Name, o.Config, o.Limits, log, u.life, u.hs, u.lanes.statelessOnly, u.handlers)
	u.listen = newListenStream(o.Name, o.Config, log, u.life, u.hs, u.decl, u.lanes)
	u.lanes.opened = u.listen.laneOpened
	return u
}

// handlers are what a connection of owner's process hands the gateway
// (Host): the server's notifications and requests. callers, when not
// nil, are the calls in flight on that process: a request outside any
// call's context is tied to the one session they all belong to.
func (u *Upstream) handlers(owner Owner, callers *callerSet) connHandlers {
	return connHandlers{
		notification: func(method string, params json.RawMessage) {
			u.host.Notification(u, owner, method, params)
		},
		request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return u.host.Request(tiedTo(ctx, callers), u, owner, method, params)
		},
		arrived: func(ctx context.Context) context.Context {
			return u.callers.arrived(tiedTo(ctx, callers))
		},
		maxAnswering: u.limits.MaxServerRequestsPerUpstream + AnswerSpare,
	}
}

// tiedTo returns ctx with the caller of the calls in flight on a process
// (callers, nil for none kept), when they are all one session's and ctx
// names no caller yet.
func tiedTo(ctx context.Context, callers *callerSet) context.Context {
	if callers != nil && CallerFrom(ctx) == nil {
		if c, _ := callers.sole(); c != nil {
			return WithCaller(ctx, c)
		}
	}
	return ctx
}

// lifetime is Run's context: what an upstream's parts do in the
// background (a user's process starting, subscriptions/listen reopening)
// ends with it.
type lifetime struct {
	p atomic.Pointer[context.Context]
}

func (l *lifetime) set(ctx context.Context) { l.p.Store(&ctx) }

func (l *lifetime) ctx() context.Context {
	if p := l.p.Load(); p != nil {
		return *p
	}
	return context.Background()
}

// Run connects and keeps the upstream connected until ctx ends; while
// a connection attempt lasts it says so in the log every logEvery
// (startLogInterval when 0).
func (u *Upstream) Run(ctx context.Context, logEvery time.Duration) {
	u.life.set(ctx)
	defer u.inst.close()
	u.inst.runPool(ctx)
	u.sup.run(ctx, logEvery, u.connect, func() { u.lanes.set(nil) })
}

// FirstTry is closed once the upstream made its first connection attempt.
func (u *Upstream) FirstTry() <-chan struct{} { return u.sup.firstTry }

// Status describes one upstream for operators.
type Status struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	State    string `json:"state"`
	Protocol string `json:"protocol,omitempty"`
	Tools    int    `json:"tools"`
	Restarts int    `json:"restarts"`
	// Instances counts the extra processes running now (pool,
	// per_session and per_user, mcpx.instances).
	Instances int    `json:"instances,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Status is the upstream's state now, for operators.
func (u *Upstream) Status() Status {
	state, restarts, lastErr := u.sup.status()
	protocol, tools := u.decl.status()
	s := Status{Name: u.Name, Type: u.Config.Kind(), State: state, Protocol: protocol, Tools: tools, Restarts: restarts, Instances: u.inst.count()}
	if lastErr != nil {
		s.Error = lastErr.Error()
	}
	return s
}

// StderrTail is the last lines a stdio upstream's current process wrote
// to stderr ("" before it has one), as exit errors quote them.
func (u *Upstream) StderrTail() string {
	if c := u.sup.stdio(); c != nil {
		return c.stderrTail()
	}
	return ""
}

// PID is the process id of a stdio upstream's current process (the
// leader of its process group), 0 when it has none.
func (u *Upstream) PID() int {
	if c := u.sup.stdio(); c != nil {
		return c.pid()
	}
	return 0
}

// Capability reports whether the server declared capability name.
func (u *Upstream) Capability(name string) bool { return u.decl.capability(name) }

// ToolDefs are the server's raw tool definitions, in its order.
func (u *Upstream) ToolDefs() []json.RawMessage { return u.decl.toolDefs() }

// Instructions are the instructions of the server's initialize result.
func (u *Upstream) Instructions() string { return u.decl.instructions() }

// StatelessOnly reports whether the upstream speaks only 2026-07-28
// (stateless_only.go).
func (u *Upstream) StatelessOnly() bool { return u.lanes.statelessOnly() }

// HasLane reports whether the upstream has a stateless (2026-07-28)
// connection open.
func (u *Upstream) HasLane() bool { return u.lanes.current() != nil }

// Listen is the upstream's subscriptions/listen stream (listen.go).
func (u *Upstream) Listen() *ListenStream { return u.listen }

// Instances are the server's extra processes (instances.go).
func (u *Upstream) Instances() *Instances { return u.inst }

// Callers are the downstream requests with calls in flight on the
// upstream, and the server requests relayed for them (callers.go).
func (u *Upstream) Callers() *Callers { return u.callers }

// ClientDeclaredRoots is told that a client declared roots: when u was
// initialized without roots, which it cannot learn of without a
// restart, that is logged once.
func (u *Upstream) ClientDeclaredRoots() { u.hs.rootsDeclared() }

// ClientRootsChanged sends notifications/roots/list_changed when u was
// told roots with listChanged and does not answer roots/list from its
// config.
func (u *Upstream) ClientRootsChanged() {
	if !u.hs.rootsListChanged() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), u.Config.RequestTimeout())
	defer cancel()
	if err := u.Notify(ctx, "notifications/roots/list_changed", nil); err != nil {
		u.Log.Debug("notifications/roots/list_changed not sent", "error", err)
	}
}
