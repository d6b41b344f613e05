package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/store"
)

// session is one downstream client connection: a stdio peer or a
// streamable-HTTP session. Its id scopes the artifacts its calls create.
type session struct {
	// ID is the session id (Mcp-Session-Id over HTTP).
	ID string
	// User is the authenticated identity (HTTP bearer token), "" over
	// stdio. It is injected as "username" and recorded in artifact scopes.
	User string
	// Tenant is the authenticated principal's tenant (auth), recorded
	// with User in artifact scopes.
	Tenant string

	limiter     *auth.RateLimiter // the principal's per-tool limits; nil: none
	g           *Gateway
	out         func([]byte) // server-initiated messages
	initialized atomic.Bool

	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc
	shown    artifacts.Shown // the artifacts the client was shown
	subs     map[string]struct{}
	closed   bool

	stateless  bool            // one 2026-07-28 HTTP request (era.go)
	owner      bool            // the local user's stdio client (Options.StdioReadsStore)
	clientCaps json.RawMessage // from initialize
	client     string          // clientInfo.name from initialize
	toClient   clientRequests  // server-to-client requests awaiting answers
}

// NewSession registers a session whose server-initiated messages
// (notifications) are written by out. Close it when the client leaves.
func (g *Gateway) newSession(who identity, out func(msg []byte)) *session {
	s := &session{
		ID:       newID(),
		User:     who.user,
		Tenant:   who.tenant,
		limiter:  who.limiter,
		g:        g,
		out:      out,
		inflight: map[string]context.CancelCauseFunc{},
		subs:     map[string]struct{}{},
	}
	g.sessMu.Lock()
	g.sessions[s.ID] = s
	g.sessMu.Unlock()
	return s
}

func (s *session) send(msg []byte) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		s.out(msg)
	}
}

// errClientGone is the cancel cause of a session's calls when it closes.
var errClientGone = errors.New("client disconnected")

// Close cancels the session's calls in flight, drops its subscriptions
// (unsubscribing upstream where it was the last subscriber) and forgets
// it. It is idempotent.
func (s *session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	// cancelled once mu is free: a started call (call_start.go) may
	// answer at once, and forget itself under mu
	cancels := make([]context.CancelCauseFunc, 0, len(s.inflight))
	for _, cancel := range s.inflight {
		cancels = append(cancels, cancel)
	}
	subs := make([]string, 0, len(s.subs))
	for uri := range s.subs {
		subs = append(subs, uri)
	}
	s.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errClientGone)
	}
	s.failRequests()
	for _, uri := range subs {
		s.g.subs.Unsubscribe(s, uri)
	}
	s.g.sessMu.Lock()
	delete(s.g.sessions, s.ID)
	s.g.sessMu.Unlock()
	s.g.cache.DropSession(s.ID)
	for _, u := range s.g.ups.All() {
		u.Instances().EndSession(s) // its per_session processes (mcpx.instances)
	}
	if s.initialized.Load() && s.clientHas("roots") {
		s.g.clientRootsChanged() // its roots are gone
	}
	if s.g.onEnd != nil && !s.stateless {
		s.g.onEnd(s.ID)
	}
}

// subscribe serves resources/subscribe: the session's subscription lasts
// until resources/unsubscribe or the session's end.
func (s *session) subscribe(ctx context.Context, uri string) error {
	if err := s.g.subs.Subscribe(ctx, s, uri); err != nil {
		return fmt.Errorf("resources/subscribe %s: %w", uri, err)
	}
	s.mu.Lock()
	s.subs[uri] = struct{}{}
	s.mu.Unlock()
	return nil
}

// unsubscribe serves resources/unsubscribe.
func (s *session) unsubscribe(uri string) {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
	s.g.subs.Unsubscribe(s, uri)
}

// Notify sends a notification on the session's own channel.
func (s *session) Notify(method string, params json.RawMessage) {
	s.send(encodeRequest(nil, method, params))
}

// Handle processes one message from the client. For a request it returns
// the response; for a notification or response, nil. Notifications that
// belong to the request (progress) go to related when it is not nil, else
// to the session's own channel. Handle is safe to call concurrently.
func (s *session) Handle(ctx context.Context, raw []byte, related func([]byte)) []byte {
	m, errResp := parseClientMessage(raw)
	if errResp != nil {
		return errResp
	}
	return s.handle(ctx, m, related)
}

func (s *session) handle(ctx context.Context, m *message, related func([]byte)) []byte {
	switch {
	case m.IsNotification():
		s.notification(m)
		return nil
	case m.IsResponse():
		s.answered(m) // to a server-to-client request relayed to the client
		return nil
	}
	ctx, end, closed := s.begin(ctx, m)
	if closed != nil {
		return closed
	}
	defer end()
	res, err := s.serve(ctx, m, related)
	return s.respond(ctx, m, res, err)
}

// begin records request m in flight: its context ends when the client
// cancels it (notifications/cancelled) or the session closes; end, once
// it is answered, forgets it. On a closed session it returns the error
// response instead.
func (s *session) begin(ctx context.Context, m *message) (_ context.Context, end func(), closed []byte) {
	key := jsonrpc.IDKey(m.ID)
	ctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(nil)
		return nil, nil, jsonrpc.EncodeError(m.ID, fmt.Errorf("session closed: %w", jsonrpc.ErrClosed))
	}
	s.inflight[key] = cancel
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
		cancel(nil)
	}, nil
}

// respond is the response to request m begun with ctx: res, or err as
// the client is told it.
func (s *session) respond(ctx context.Context, m *message, res json.RawMessage, err error) []byte {
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	return s.respondCause(m, res, err, cause)
}

// respondCause is respond for a request cancelled for cause (nil: not
// cancelled): an error names the cause rather than the cancellation.
func (s *session) respondCause(m *message, res json.RawMessage, err, cause error) []byte {
	if err != nil {
		if cause != nil && !errors.Is(err, jsonrpc.ErrUpstreamTimeout) {
			err = fmt.Errorf("%s: %w", m.Method, cause)
		}
		return jsonrpc.EncodeError(m.ID, s.g.clientError(m.Method, s.ID, err))
	}
	return jsonrpc.EncodeResult(m.ID, res)
}

func (s *session) notification(m *message) {
	switch m.Method {
	case "notifications/initialized":
		s.initialized.Store(true)
		if s.clientHas("roots") {
			s.g.clientRootsChanged()
		}
	case "notifications/cancelled":
		key := jsonrpc.IDKey(json.RawMessage(gjson.GetBytes(m.Params, "requestId").Raw))
		s.mu.Lock()
		cancel := s.inflight[key]
		s.mu.Unlock()
		if cancel != nil {
			cancel(fmt.Errorf("cancelled by the client: %s", gjson.GetBytes(m.Params, "reason").String()))
		}
	case "notifications/roots/list_changed":
		s.g.clientRootsChanged()
	}
}

// supportedDownstream are the protocol versions a client may pick; others
// get DownstreamProtocolVersion.
var supportedDownstream = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326, mcp.ProtocolVersion20241105}

// downstreamProtocolVersion is the version offered to clients that ask for
// one mcpx does not speak.
const downstreamProtocolVersion = mcp.ProtocolVersion20251125

func (s *session) request(ctx context.Context, m *message, related func([]byte)) (json.RawMessage, error) {
	g := s.g
	switch m.Method {
	case "initialize":
		return s.initialize(ctx, m.Params)
	case "ping":
		return json.RawMessage("{}"), nil
	}
	if !s.stateless {
		// a session that skipped initialize declared nothing: the
		// upstreams must not wait for it
		g.clientArrived(nil)
	}
	switch m.Method {
	case "tools/list":
		return g.tools.List(), nil
	case "tools/call":
		return s.callTool(ctx, m.Params, related)
	case "resources/list":
		return g.res.List(ctx, s.reader(), m.Params, false)
	case "resources/templates/list":
		return g.res.List(ctx, s.reader(), m.Params, true)
	case "resources/read":
		uri := gjson.GetBytes(m.Params, "uri").String()
		if uri == "" {
			return nil, fmt.Errorf("resources/read: %w: \"uri\" is required", jsonrpc.ErrBadParams)
		}
		return g.res.Read(ctx, s.reader(), uri, m.Params)
	case "resources/subscribe", "resources/unsubscribe":
		uri := gjson.GetBytes(m.Params, "uri").String()
		if uri == "" {
			return nil, fmt.Errorf("%s: %w: \"uri\" is required", m.Method, jsonrpc.ErrBadParams)
		}
		if m.Method == "resources/subscribe" {
			return json.RawMessage("{}"), s.subscribe(ctx, uri)
		}
		s.unsubscribe(uri)
		return json.RawMessage("{}"), nil
	case "prompts/list":
		return g.prompts.List(ctx)
	case "prompts/get":
		return g.prompts.Get(ctx, m.Params)
	case "logging/setLevel":
		var errs []error
		for _, u := range g.ups.All() {
			if u.Capability("logging") {
				if _, err := u.Call(ctx, m.Method, m.Params); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if len(errs) > 0 {
			g.log.Warn("logging/setLevel failed upstream", "error", errors.Join(errs...))
		}
		return json.RawMessage("{}"), nil
	case "completion/complete":
		return g.prompts.Complete(ctx, m.Params)
	}
	return nil, fmt.Errorf("%w: %s", jsonrpc.ErrMethodNotFound, m.Method)
}

func (s *session) initialize(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	g := s.g
	caps := json.RawMessage(gjson.GetBytes(params, "capabilities").Raw)
	s.setClientCaps(caps)
	s.mu.Lock()
	s.client = gjson.GetBytes(params, "clientInfo.name").String()
	s.mu.Unlock()
	g.clientArrived(caps) // before waiting: the upstreams' initialize may wait for it
	g.ups.AwaitStart(ctx)
	pv := gjson.GetBytes(params, "protocolVersion").String()
	if !slices.Contains(supportedDownstream, pv) {
		pv = downstreamProtocolVersion
	}
	res := g.serverDescription(false)
	res["protocolVersion"] = pv
	return json.Marshal(res)
}

func joinLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "\n"
		}
		out += l
	}
	return out
}

// callTool forwards a tools/call and passes the result through the engine.
func (s *session) callTool(ctx context.Context, params json.RawMessage, related func([]byte)) (json.RawMessage, error) {
	g := s.g
	r, name, err := s.toolRoute(ctx, params)
	if err != nil {
		return nil, err
	}
	meta := gjson.GetBytes(params, "_meta")
	if g.observer == nil && g.tracer == nil && !hasHeaderTrace(ctx) {
		return s.forwardCall(ctx, r, name, params, meta, related, nil)
	}
	return s.observedCall(ctx, r, name, params, meta, related)
}

// toolRoute finds where a tools/call goes, and checks that the caller
// may call it now.
func (s *session) toolRoute(ctx context.Context, params json.RawMessage) (r *router.Route, name string, err error) {
	g := s.g
	name = gjson.GetBytes(params, "name").String()
	r, ok := g.tools.Route(name)
	if !ok {
		// a client that did not wait for initialize: let the upstreams
		// make their first attempt, then look again
		g.ups.AwaitStart(ctx)
		if r, ok = g.tools.Route(name); !ok {
			return nil, name, fmt.Errorf("tools/call %q: %w", name, jsonrpc.ErrUnknownTool)
		}
	}
	if err := s.allowToolCall(r.Server(), r.Tool); err != nil {
		return nil, name, fmt.Errorf("tools/call %q: %w", name, err)
	}
	return r, name, nil
}

// forwardCall sends a routed tools/call upstream and transforms its
// result; oc, when not nil, gets the engine's result and gives the
// traceparent to send upstream.
func (s *session) forwardCall(ctx context.Context, r *router.Route, name string, params json.RawMessage, meta gjson.Result, related func([]byte), oc *callOutcome) (json.RawMessage, error) {
	f := s.forwarding(r, name, params, gjson.GetBytes(params, "arguments"), meta, oc)
	switch {
	case r.Up == nil:
		return s.g.art.Tool(ctx, s.reader(), r.Generated, f.args)
	case r.Generated != "":
		return s.g.res.Tool(ctx, s.reader(), r, f.args, f.scope)
	}
	if err := f.prepare(ctx, meta, related); err != nil {
		return nil, err
	}
	defer f.release()
	raw, err := r.Up.Call(ctx, "tools/call", f.up)
	return f.finish(ctx, raw, err)
}

// forwarded is a tools/call of an upstream's tool on its way: what goes
// upstream, and what its answer is transformed with.
type forwarded struct {
	s      *session
	r      *router.Route
	name   string          // as the client called it
	params json.RawMessage // the client's
	args   json.RawMessage // the arguments, as they go upstream once prepared
	scope  store.Scope
	oc     *callOutcome // nil: the call is not observed
	up     []byte       // the upstream request's params, once prepared
	token  string       // the upstream progress token; "" when none
	stored bool         // finish stored an artifact
}

// forwarding is the call of r's tool named name with params, whose
// arguments and _meta are args and meta.
func (s *session) forwarding(r *router.Route, name string, params json.RawMessage, args, meta gjson.Result, oc *callOutcome) *forwarded {
	f := &forwarded{s: s, r: r, name: name, params: params, oc: oc}
	f.scope = store.Scope{TenantID: s.Tenant, SessionID: s.ID, UserID: s.User, TraceID: traceID(meta)}
	if args.Exists() {
		f.args = sub(params, args)
	}
	return f
}

// prepare makes the upstream request's params; release undoes what it
// registered once the call is over.
func (f *forwarded) prepare(ctx context.Context, meta gjson.Result, related func([]byte)) error {
	s, r, name := f.s, f.r, f.name
	orig := f.args
	var err error
	if f.args, err = s.g.art.RewriteArgs(ctx, s.reader(), r.Args, s.injects(r), f.args); err != nil {
		return fmt.Errorf("tools/call %q: arguments: %w", name, err)
	}
	// The client's params go upstream as they are unless something in
	// them changes: the common call is neither copied nor re-encoded.
	up := []byte(f.params)
	if r.Tool != name {
		if up, err = sjson.SetBytes(up, "name", r.Tool); err != nil {
			return fmt.Errorf("tools/call: %w: %v", jsonrpc.ErrBadParams, err)
		}
	}
	if len(f.args) > 0 && !sameBytes(f.args, orig) {
		if up, err = sjson.SetRawBytes(up, "arguments", f.args); err != nil {
			return fmt.Errorf("tools/call: %w: %v", jsonrpc.ErrBadParams, err)
		}
	}
	if tok := meta.Get("progressToken"); tok.Exists() {
		f.token = s.g.mapProgress(s, json.RawMessage(tok.Raw), related)
		if up, err = sjson.SetRawBytes(up, "_meta.progressToken", []byte(f.token)); err != nil {
			f.release()
			return fmt.Errorf("tools/call: %w: %v", jsonrpc.ErrBadParams, err)
		}
	}
	if f.oc != nil {
		if up, err = f.oc.propagate(up); err != nil {
			f.release()
			return fmt.Errorf("tools/call: %w: %v", jsonrpc.ErrBadParams, err)
		}
	}
	f.up = up
	return nil
}

func (f *forwarded) release() {
	if f.token != "" {
		f.s.g.unmapProgress(f.token)
		f.token = ""
	}
}

// finish transforms the upstream's answer raw (or names err).
func (f *forwarded) finish(ctx context.Context, raw json.RawMessage, err error) (json.RawMessage, error) {
	s, r := f.s, f.r
	if err != nil {
		return nil, fmt.Errorf("tools/call %q on %s: %w", f.name, r.Up.Name, err)
	}
	view := s.g.profiles.view(s.clientName(f.params))
	res, err := s.g.art.Transform(ctx, s.reader(), engine.Call{Server: r.Up.Name, Tool: r.Tool, Arguments: f.args, Scope: f.scope, OutputSchema: r.Output, View: view}, raw)
	if err != nil {
		return nil, err
	}
	f.stored = len(res.Artifacts) > 0
	if f.oc != nil {
		f.oc.res, f.oc.scope = res, f.scope
	}
	return res.Raw, nil
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// mapProgress gives a client's progress token a gateway-unique upstream
// token and returns it (as JSON).
func (g *Gateway) mapProgress(s *session, token json.RawMessage, related func([]byte)) string {
	up := `"mcpx-` + fmt.Sprint(g.progSeq.Add(1)) + `"`
	g.progMu.Lock()
	g.progress[up] = progressRoute{s: s, token: token, related: related}
	g.progMu.Unlock()
	return up
}

func (g *Gateway) unmapProgress(up string) {
	g.progMu.Lock()
	delete(g.progress, up)
	g.progMu.Unlock()
}

// injects reports whether a call of r's tool gets the session's user as
// its "username" argument: the tool's schema declares it, and the user is
// authenticated.
func (s *session) injects(r *router.Route) bool { return r.Username && s.User != "" }
