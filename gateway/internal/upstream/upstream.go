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
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	config "github.com/mcpx-dev/mcpx/internal/gatewayconfig"
)

// ProtocolVersion is the MCP version mcpx asks upstreams for. Many
// servers (server-everything among them) speak no newer one; servers that
// answer with another version mcp-go knows are accepted.
const ProtocolVersion = mcp.ProtocolVersion20251125

// Restart backoff of a crashed stdio upstream: the first retry waits
// restartMin, each further one twice as long up to restartMax; a
// connection that lived restartReset resets it.
const (
	restartMin   = 200 * time.Millisecond
	restartMax   = 30 * time.Second
	restartReset = 60 * time.Second
)

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
type Upstream struct {
	// Name and Config are the server's, from Options; Log is its logger.
	Name   string
	Config config.ServerConfig
	Log    hclog.Logger

	host      Host
	limits    config.Limits
	version   string
	startWait time.Duration
	first     <-chan struct{}                 // Options.FirstClient
	life      atomic.Pointer[context.Context] // Run's context

	firstTry chan struct{} // closed after the first connection attempt
	once     sync.Once

	mu        sync.RWMutex
	c         conn
	state     string
	lastErr   error
	init      json.RawMessage // the initialize result
	caps      gjson.Result    // its capabilities
	protocol  string
	tools     []json.RawMessage // raw tool definitions, in the server's order
	restarts  int
	nextRetry time.Time

	callers  upstreamCallers // downstream requests with calls in flight here
	declared declaredCaps    // what this connection was told in initialize (declared.go)
	lane     conn            // the 2026-07-28 connection, if any (era.go)
	stdLane  stdioLane       // a stdio upstream's, opened on demand (stdio_lane.go)
	listen   upstreamListen  // a stateless-only upstream's subscriptions/listen (listen.go)
	inst     instances       // pool, per_session and per_user processes (instances.go)
	// statelessOnly: the upstream speaks only 2026-07-28, remembered
	// across reconnects (stateless_only.go)
	statelessOnly atomic.Bool
}

// New returns the supervisor of one server; Run connects it.
func New(o Options) *Upstream {
	return &Upstream{
		Name:      o.Name,
		Config:    o.Config,
		Log:       o.Log.Named("upstream").With("server", o.Name),
		host:      o.Host,
		limits:    o.Limits,
		version:   o.Version,
		startWait: o.StartWait,
		first:     o.FirstClient,
		firstTry:  make(chan struct{}),
		state:     StateStarting,
		inst:      instances{up: make(chan struct{})},
	}
}

// FirstTry is closed once the upstream made its first connection attempt.
func (u *Upstream) FirstTry() <-chan struct{} { return u.firstTry }

// StatelessOnly reports whether the upstream speaks only 2026-07-28
// (stateless_only.go).
func (u *Upstream) StatelessOnly() bool { return u.statelessOnly.Load() }

// Instructions are the instructions of the server's initialize result.
func (u *Upstream) Instructions() string {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return gjson.GetBytes(u.init, "instructions").String()
}

// lifetime is Run's context: what the upstream does in the background
// (reopening subscriptions/listen) ends with it.
func (u *Upstream) lifetime() context.Context {
	if p := u.life.Load(); p != nil {
		return *p
	}
	return context.Background()
}

// Run connects and keeps the upstream connected until ctx ends; while
// a connection attempt lasts it says so in the log every logEvery
// (startLogInterval when 0).
func (u *Upstream) Run(ctx context.Context, logEvery time.Duration) {
	u.life.Store(&ctx)
	defer u.closeInstances()
	if u.Config.PoolSize() > 1 {
		u.inst.slots.Add(1)
		go u.runPool(ctx)
	}
	backoff := restartMin
	for {
		start := time.Now()
		stopLog := u.logStarting(start, logEvery)
		c, err := u.connect(ctx)
		stopLog()
		u.once.Do(func() { close(u.firstTry) })
		if err == nil {
			select {
			case <-c.done():
				err = c.cause()
				u.down(err)
			case <-ctx.Done():
				_ = c.close()
				u.setLane(nil)
				u.setState(StateClosed, nil)
				return
			}
			if time.Since(start) > restartReset {
				backoff = restartMin
			}
		} else {
			u.down(err)
		}
		if ctx.Err() != nil {
			u.setState(StateClosed, nil)
			return
		}
		if err == nil {
			// a connection that ended without saying why
			err = fmt.Errorf("upstream[%s]: connection ended: %w", u.Name, jsonrpc.ErrUpstreamExited)
		}
		u.mu.Lock()
		u.restarts++
		u.nextRetry = time.Now().Add(backoff)
		u.state = StateRestarting
		u.mu.Unlock()
		u.Log.Warn("upstream down; retrying", "error", err, "retry_in_ms", backoff.Milliseconds())
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			u.setState(StateClosed, nil)
			return
		}
		backoff = min(backoff*2, restartMax)
	}
}

// startLogInterval is how often an upstream that is still starting says
// so in the log.
const startLogInterval = 5 * time.Second

// logStarting says in the log, every startLogInterval until the returned
// func is called, that the upstream is still starting and for how long it
// may: a first "go run" or "npx -y" takes minutes, and clients wait for
// it meanwhile. Past StartWait it says so as a warning.
func (u *Upstream) logStarting(start time.Time, every time.Duration) (stop func()) {
	done := make(chan struct{})
	if every <= 0 {
		every = startLogInterval
	}
	limit := u.Config.StartupTimeout()
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				so := time.Since(start).Round(time.Second)
				msg := fmt.Sprintf("waiting for upstream %s to start (%d s so far, up to %d s)", u.Name, int(so.Seconds()), int(limit.Seconds()))
				if so <= u.startWait {
					u.Log.Info(msg, "waited", so, "startup_timeout", limit)
				} else { // past what a client's initialize waits at least: worth seeing at the default level
					u.Log.Warn(msg, "waited", so, "startup_timeout", limit)
				}
			}
		}
	}()
	return func() { close(done) }
}

func (u *Upstream) setState(s string, err error) {
	u.mu.Lock()
	u.state, u.lastErr = s, err
	if s != StateReady {
		u.c = nil
	}
	u.mu.Unlock()
}

func (u *Upstream) down(err error) {
	u.mu.Lock()
	u.c = nil
	u.state = StateFailed
	u.lastErr = err
	u.mu.Unlock()
}

// connect starts a connection, runs the initialize handshake and loads the
// tool list.
func (u *Upstream) connect(ctx context.Context) (conn, error) {
	h := connHandlers{
		notification: u.notification,
		request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return u.host.Request(ctx, u, Owner{}, method, params)
		},
		maxAnswering: u.limits.MaxServerRequestsPerUpstream + AnswerSpare,
	}
	var (
		c   conn
		err error
	)
	switch u.Config.Kind() {
	case config.TypeStdio:
		c, err = startStdio(u.Name, u.Config, u.limits, u.Log, h)
	default:
		c, err = startHTTP(ctx, u.Name, u.Config, u.limits, u.Log, h)
	}
	if err != nil {
		return nil, err
	}
	caps, err := u.declaration(ctx, c)
	if err != nil {
		_ = c.close()
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, u.Config.StartupTimeout())
	defer cancel()
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "mcpx", "version": u.version},
	})
	if u.startsStateless() {
		sc, _, err := u.connectStateless(ictx, c)
		return sc, err
	}
	res, err := c.call(ictx, "initialize", params)
	if err != nil {
		if ictx.Err() == nil && u.Config.Mcpx.Protocol != mcp.ProtocolVersion20251125 {
			if sc, _, serr := u.connectStateless(ictx, c); serr == nil {
				return sc, nil
			}
		}
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: initialize: %w", u.Name, timeoutErr(ictx, err))
	}
	pv := gjson.GetBytes(res, "protocolVersion").String()
	if !mcp.IsValidProtocolVersion(pv) {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: initialize: unsupported protocol version %q", u.Name, pv)
	}
	if hc, ok := c.(*httpConn); ok {
		hc.setProtocolVersion(pv)
	}
	if err := c.notify(ictx, "notifications/initialized", nil); err != nil {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: initialized: %w", u.Name, err)
	}
	u.mu.Lock()
	u.c = c
	u.init = res
	u.caps = gjson.GetBytes(res, "capabilities")
	u.protocol = pv
	u.state = StateReady
	u.lastErr = nil
	u.mu.Unlock()
	toolsErr := u.LoadTools(ictx)
	if toolsErr != nil {
		u.Log.Warn("tools/list failed; its tools are not offered until a retry succeeds", "error", toolsErr)
	}
	u.setLane(u.probeStateless(ictx))
	u.Log.Info("upstream ready", "protocol", pv, "tools", len(u.ToolDefs()))
	u.primaryUp()
	u.host.Ready(u)
	if toolsErr != nil {
		go u.retryTools(c)
	}
	return c, nil
}

// retryTools lists the tools of connection c again (after 1, 2, 4, 8 and
// 16 s) until it works, c is no longer the upstream's, or the retries run
// out; then the gateway is told, as when the server starts (clients hear
// list_changed). Without it a server whose first tools/list failed (a
// slow start on a loaded machine) would offer no tools until it restarts
// or says list_changed.
func (u *Upstream) retryTools(c conn) {
	for wait := time.Second; wait <= 16*time.Second; wait *= 2 {
		select {
		case <-time.After(wait):
		case <-c.done():
			return
		}
		u.mu.Lock()
		current := u.c == c
		u.mu.Unlock()
		if !current {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), u.Config.StartupTimeout())
		err := u.LoadTools(ctx)
		cancel()
		if err == nil {
			u.Log.Info("tools/list worked on a retry", "tools", len(u.ToolDefs()))
			u.host.Ready(u)
			return
		}
		u.Log.Warn("tools/list failed again", "error", err)
	}
}

// loadTools fetches every page of tools/list.
func (u *Upstream) LoadTools(ctx context.Context) error {
	if !u.Capability("tools") {
		u.mu.Lock()
		u.tools = nil
		u.mu.Unlock()
		return nil
	}
	var all []json.RawMessage
	cursor := ""
	for page := 0; page < MaxPages; page++ {
		params := json.RawMessage(nil)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		res, err := u.Call(ctx, "tools/list", params)
		if err != nil {
			return err
		}
		gjson.GetBytes(res, "tools").ForEach(func(_, v gjson.Result) bool {
			all = append(all, json.RawMessage(v.Raw))
			return true
		})
		cursor = gjson.GetBytes(res, "nextCursor").String()
		if cursor == "" {
			break
		}
	}
	u.mu.Lock()
	u.tools = all
	u.mu.Unlock()
	return nil
}

// MaxPages bounds every pagination loop over an upstream.
const MaxPages = 1000

func (u *Upstream) ToolDefs() []json.RawMessage {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.tools
}

// capability reports whether the upstream declared capability name.
func (u *Upstream) Capability(name string) bool {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.caps.Get(name).Exists()
}

func (u *Upstream) capabilityFlag(name, flag string) bool {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.caps.Get(name + "." + flag).Bool()
}

// call sends a request under the upstream's timeout.
func (u *Upstream) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	u.mu.RLock()
	c, state, lastErr, retry := u.c, u.state, u.lastErr, u.nextRetry
	u.mu.RUnlock()
	if c == nil {
		msg := fmt.Sprintf("upstream[%s] is %s", u.Name, state)
		if state == StateRestarting && !retry.IsZero() {
			msg += fmt.Sprintf(" (next attempt in %s)", time.Until(retry).Round(time.Millisecond))
		}
		if lastErr != nil {
			msg += ": " + lastErr.Error()
		}
		return nil, fmt.Errorf("%s: %w", msg, jsonrpc.ErrUpstreamUnavailable)
	}
	cl := CallerFrom(ctx)
	var (
		lane      conn
		meta      json.RawMessage
		stateless bool
	)
	if cl != nil {
		meta, stateless = cl.StatelessMeta()
	}
	if stateless && !u.statelessOnly.Load() && !u.perUserCall(method) {
		// Before the call counts as in flight: a stdio upstream's lane
		// may start now, and what the upstream asks meanwhile (roots/list
		// right after its initialize) is not this call's. A per_user
		// server's calls skip it: the lane is every user's process.
		lane = u.statelessLane(ctx)
	}
	if cl != nil {
		defer u.callers.enter(cl)()
	}
	if u.statelessOnly.Load() {
		if cl != nil && u.perUserCall(method) {
			r, err := u.routeCall(ctx, c, cl, stateless, method) // the principal's own process
			if err != nil {
				return nil, err
			}
			defer r.enter(cl)()
			c = r.c
		}
		ctx, cancel := context.WithTimeoutCause(ctx, u.Config.RequestTimeout(), jsonrpc.ErrUpstreamTimeout)
		defer cancel()
		res, err := u.callStatelessOnly(ctx, c, meta, stateless, method, params) // stateless_only.go
		return res, timeoutErr(ctx, err)
	}
	if cl != nil {
		if stateless {
			if lane != nil {
				ctx, cancel := context.WithTimeoutCause(ctx, u.Config.RequestTimeout(), jsonrpc.ErrUpstreamTimeout)
				defer cancel()
				res, err := u.callLane(ctx, lane, method, withStatelessMeta(params, meta))
				return res, timeoutErr(ctx, err)
			}
			params = u.statelessParams(params)
		}
	}
	// A pool's least busy process, or the session's or principal's own
	// (instances.go), which may start now, before the request's timeout.
	r, err := u.routeCall(ctx, c, cl, stateless, method)
	if err != nil {
		return nil, err
	}
	defer r.enter(cl)()
	ctx, cancel := context.WithTimeoutCause(ctx, u.Config.RequestTimeout(), jsonrpc.ErrUpstreamTimeout)
	defer cancel()
	res, err := r.c.call(ctx, method, params)
	if err != nil {
		return nil, timeoutErr(ctx, err)
	}
	return res, nil
}

// Starts reports whether Start sends method to u without a goroutine of
// its own waiting for the answer: u is a stdio server served in the
// session era, and the call does not start a process (a per_session or
// per_user instance). Start is right either way; this tells a caller
// whether preparing for it on a goroutine that must not wait is worth
// it.
func (u *Upstream) Starts(method string) bool {
	return u.Config.Kind() == config.TypeStdio && !u.statelessOnly.Load() && !u.startsProcess(method)
}

// Start is Call without waiting for the answer: done gets what Call
// would return, once. Where Starts holds, the request goes out before
// Start returns and done runs on the goroutine that has the answer (the
// connection's reader: done must not wait long), with no goroutine
// waiting in between; otherwise Call runs on a goroutine of its own.
// cancel ends the call as the end of ctx would (done gets
// context.Canceled, the server notifications/cancelled), without the
// caller making a context per call to cancel.
func (u *Upstream) Start(ctx context.Context, method string, params json.RawMessage, done func(json.RawMessage, error)) (cancel func()) {
	u.mu.RLock()
	c := u.c
	u.mu.RUnlock()
	cl := CallerFrom(ctx)
	stateless := false
	if cl != nil {
		_, stateless = cl.StatelessMeta()
	}
	if _, ok := c.(*stdioConn); !ok || stateless || !u.Starts(method) {
		return u.callOnGoroutine(ctx, method, params, done)
	}
	// As Call does, in the same order, with no wait on the way.
	leave := func() {}
	if cl != nil {
		leave = u.callers.enter(cl)
	}
	r, err := u.routeCall(ctx, c, cl, false, method)
	sc, ok := r.c.(*stdioConn)
	if err != nil || !ok { // neither happens where Starts holds
		if err == nil {
			r.enter(nil)()
		}
		leave()
		return u.callOnGoroutine(ctx, method, params, done)
	}
	exit := r.enter(cl)
	return sc.start(ctx, u.Config.RequestTimeout(), method, params, func(res json.RawMessage, err error) {
		if err != nil {
			res, err = nil, timeoutErr(ctx, err)
		}
		exit()
		leave()
		done(res, err)
	})
}

// callOnGoroutine is Start where the call cannot be started: Call on a
// goroutine of its own, under a context that cancel ends.
func (u *Upstream) callOnGoroutine(ctx context.Context, method string, params json.RawMessage, done func(json.RawMessage, error)) (cancel func()) {
	ctx, stop := context.WithCancel(ctx)
	go func() {
		defer stop()
		done(u.Call(ctx, method, params))
	}()
	return stop
}

// timeoutErr names the timeout when ctx's deadline caused err.
func timeoutErr(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), jsonrpc.ErrUpstreamTimeout) && ctx.Err() != nil {
		return fmt.Errorf("no answer within the timeout: %w", jsonrpc.ErrUpstreamTimeout)
	}
	return err
}

func (u *Upstream) Notify(ctx context.Context, method string, params json.RawMessage) error {
	u.mu.RLock()
	c := u.c
	u.mu.RUnlock()
	if c == nil {
		return fmt.Errorf("upstream[%s]: %w", u.Name, jsonrpc.ErrUpstreamUnavailable)
	}
	return c.notify(ctx, method, params)
}

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

func (u *Upstream) Status() Status {
	u.mu.RLock()
	defer u.mu.RUnlock()
	s := Status{Name: u.Name, Type: u.Config.Kind(), State: u.state, Protocol: u.protocol, Tools: len(u.tools), Restarts: u.restarts, Instances: u.instanceCount()}
	if u.lastErr != nil {
		s.Error = u.lastErr.Error()
	}
	return s
}

// notification hands what the server sent on its own to the host: from
// a process every client may hear.
func (u *Upstream) notification(method string, params json.RawMessage) {
	u.host.Notification(u, Owner{}, method, params)
}
