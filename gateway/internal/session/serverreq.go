package session

// Server-to-client requests (MCP 2025-11-25): an upstream asks the client
// for sampling/createMessage, elicitation/create or roots/list. The
// gateway is the upstream's client, so it must find the downstream client
// the request is for and relay it, then hand the client's answer back.
//
// Upstream connections are shared by every downstream session, so a
// request names no session. The gateway decides, in this order:
//
//  1. The request arrived on the stream of one of the gateway's own calls
//     (a streamable-HTTP upstream answers a POST with an SSE stream and
//     sends related requests on it): that call's caller.
//  2. Calls are in flight to this upstream on behalf of exactly one
//     downstream session: that session, on the stream of its latest call.
//     A stdio upstream interleaves everything on one pipe, so this is the
//     only evidence there is.
//  3. roots/list with no call in flight (servers ask right after
//     initialization and on roots/list_changed): the only initialized
//     session whose client declared roots, when there is exactly one.
//
// Anything else (calls of several sessions in flight on a stdio upstream)
// is refused with ErrAmbiguousCaller rather than guessed: an elicitation
// must never reach a user it was not meant for.
//
// A process of one session or principal (mcpx.instances per_session,
// per_user) asks only its owner: 2 and 3 look at the owner's sessions
// alone. The shared process of a per_user server serves no principal's
// call, so it asks no client at all: one user's roots or answers would
// become state that every user's lists are served from.
//
// A relayed request waits for a person or a model, so an upstream could
// pile up any number of them: each client request may have
// Limits.MaxServerRequestsPerCall relayed and unanswered, each upstream
// Limits.MaxServerRequestsPerUpstream. Past either the upstream's request
// is answered at once with ErrTooManyServerRequests, never relayed, and
// costs nothing while it waits.
//
// What the gateway declares upstream follows the clients (see
// upstream_caps.go); a client that lacks the capability a request needs
// is not asked: the upstream gets "method not found". roots/list is
// answered from ServerOptions.Roots when they are set.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// ErrAmbiguousCaller is the error an upstream gets for a server-to-client
// request that the gateway cannot tie to one downstream session.
var ErrAmbiguousCaller = errors.New("mcpx cannot tell which client this request is for")

// ErrNoCaller is the error an upstream gets for a server-to-client
// request while no downstream client could answer it.
var ErrNoCaller = errors.New("no client is connected that could answer")

// caller is one downstream request in flight: the gateway's calls
// upstream on its behalf carry it in their context.
type caller struct {
	s       *Session
	related func([]byte) // the request's own stream (HTTP), or nil
	ctx     context.Context
	seq     int64 // order of arrival, to pick the latest
	// stateless: a 2026-07-28 request, which cannot be sent requests
	stateless bool
	// meta: a stateless request's _meta, for the requests the gateway
	// makes upstream on its behalf (lists it gathers, pages it reads)
	meta json.RawMessage
	// bridge: a stateless request's call that the upstream's requests
	// turn into input_required rounds (bridge.go), or nil
	bridge *inputBridge
	// asking: the server requests relayed for this request, unanswered
	asking atomic.Int32
	// call: a started tools/call (call_start.go), whose context ctx is
	// not: it is made when a request relayed for it needs one
	call *startedCall
}

// context ends when the request does.
func (c *caller) context() context.Context {
	if c.call != nil {
		return c.call.context()
	}
	return c.ctx
}

func withCaller(ctx context.Context, s *Session, related func([]byte)) context.Context {
	c := &caller{s: s, related: related, seq: s.rooms.Sessions.seq.Add(1)}
	ctx = upstream.WithCaller(ctx, c)
	c.ctx = ctx
	return ctx
}

func callerFrom(ctx context.Context) *caller {
	c, _ := upstream.CallerFrom(ctx).(*caller)
	return c
}

// Session, Principal, Seq and StatelessMeta make a caller an
// upstream.Caller.
func (c *caller) Session() any      { return c.s }
func (c *caller) Principal() string { return c.s.principalKey() }
func (c *caller) Seq() int64        { return c.seq }
func (c *caller) StatelessMeta() (json.RawMessage, bool) {
	return c.meta, c.stateless
}

// ErrSharedAsksNobody is the error the shared process of a per_user
// server gets for a request outside any call (see the top of this file).
var ErrSharedAsksNobody = errors.New("the shared process of a per_user server (mcpx.instances) serves no user's call, so it asks no client")

// callerFor finds the downstream caller a server-to-client request of u's
// process of from is for (see the top of this file).
func (r *Registry) callerFor(ctx context.Context, u *upstream.Upstream, from upstream.Owner, idleOK bool) (*caller, error) {
	if c := callerFrom(ctx); c != nil {
		return c, nil
	}
	everyone := from == (upstream.Owner{})
	if everyone && u.Config.InstanceMode() == config.InstancesPerUser {
		return nil, ErrSharedAsksNobody
	}
	if everyone {
		// An owned process's request came with the caller of its own
		// calls in flight, when they were one session's: a call of
		// another owner on another process is no evidence for it.
		sole, n := u.Callers().SoleAt(ctx)
		if c, ok := sole.(*caller); ok {
			return c, nil
		}
		if n > 1 {
			return nil, fmt.Errorf("%w: %d sessions have calls in flight on upstream %s", ErrAmbiguousCaller, n, u.Name)
		}
	}
	if idleOK {
		asked := r.all(func(s *Session) bool { return s.initialized.Load() && s.clientHas("roots") && s.Hears(from) })
		if count := len(asked); count == 1 {
			return &caller{s: asked[0], ctx: r.ups.Context()}, nil
		} else if count > 1 {
			return nil, fmt.Errorf("%w: %d sessions with roots are connected and none has a call in flight on upstream %s", ErrAmbiguousCaller, count, u.Name)
		}
	}
	return nil, ErrNoCaller
}

// clientCapability names the capability a client must declare to be asked
// method.
var clientCapability = map[string]string{
	"sampling/createMessage": "sampling",
	"elicitation/create":     "elicitation",
	"roots/list":             "roots",
}

// Asked returns the session a server-to-client request of u's process of
// from goes to when it comes outside any call (as roots/list does), or
// why none does (ErrNoCaller, ErrAmbiguousCaller, ErrSharedAsksNobody).
func (r *Registry) Asked(ctx context.Context, u *upstream.Upstream, from upstream.Owner) (*Session, error) {
	c, err := r.callerFor(ctx, u, from, true)
	if err != nil {
		return nil, err
	}
	return c.s, nil
}

// Relay answers what upstream u asks the gateway (a request of its
// process of from), relaying it to the client it is for (see the top of
// this file).
func (r *Registry) Relay(ctx context.Context, u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) (json.RawMessage, error) {
	if method == "ping" {
		return json.RawMessage("{}"), nil
	}
	capName, ok := clientCapability[method]
	if !ok {
		return nil, fmt.Errorf("%w: mcpx does not forward %s to clients", jsonrpc.ErrMethodNotFound, method)
	}
	if method == "roots/list" && len(u.Config.Mcpx.Roots) > 0 {
		return json.Marshal(map[string]any{"roots": u.Config.Mcpx.Roots})
	}
	c, err := r.callerFor(ctx, u, from, method == "roots/list")
	if err != nil {
		u.Log.Warn("server-to-client request not relayed", "method", method, "error", err)
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if c.stateless {
		if c.bridge == nil {
			return nil, fmt.Errorf("%w: the client's request (%s) is not one that may ask for input", jsonrpc.ErrMethodNotFound, mcp.ProtocolVersion20260728)
		}
		if !gjson.GetBytes(c.meta, strings.ReplaceAll(mcp.MetaKeyClientCapabilities, ".", `\.`)+"."+capName).Exists() {
			return nil, fmt.Errorf("%w: the client declared no %s capability", jsonrpc.ErrMethodNotFound, capName)
		}
		done, err := u.Callers().Admit(method, &c.asking)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		defer done()
		u.Log.Debug("bridging a server-to-client request to input_required", "method", method)
		return c.bridge.ask(ctx, method, params)
	}
	if !c.s.clientHas(capName) {
		return nil, fmt.Errorf("%w: the client declared no %s capability", jsonrpc.ErrMethodNotFound, capName)
	}
	done, err := u.Callers().Admit(method, &c.asking)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer done()
	u.Log.Debug("relaying a server-to-client request", "method", method, "session", c.s.ID)
	return c.s.toClient.ask(c.context(), c.s.Send, c.related, method, params)
}

// clientRequests are a session's requests to its client awaiting answers.
type clientRequests struct {
	mu      sync.Mutex
	next    int64
	pending map[string]chan *jsonrpc.Message
	closed  bool
}

// ask sends the client a request with send, or on related when it is
// not nil, and waits for the answer, for ctx, or for the session to
// close (fail).
func (cr *clientRequests) ask(ctx context.Context, send, related func([]byte), method string, params json.RawMessage) (json.RawMessage, error) {
	ch := make(chan *jsonrpc.Message, 1)
	cr.mu.Lock()
	if cr.closed {
		cr.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, errClientGone)
	}
	if cr.pending == nil {
		cr.pending = map[string]chan *jsonrpc.Message{}
	}
	cr.next++
	id := json.RawMessage(strconv.Quote("mcpx-" + strconv.FormatInt(cr.next, 10)))
	cr.pending[jsonrpc.IDKey(id)] = ch
	cr.mu.Unlock()
	msg := jsonrpc.EncodeRequest(id, method, params)
	if related != nil {
		related(msg)
	} else {
		send(msg)
	}
	select {
	case m := <-ch:
		if m == nil {
			return nil, fmt.Errorf("%s: %w", method, errClientGone)
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		cr.mu.Lock()
		delete(cr.pending, jsonrpc.IDKey(id))
		cr.mu.Unlock()
		p, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the request it served has ended"})
		send(jsonrpc.EncodeRequest(nil, "notifications/cancelled", p))
		return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
}

// answered delivers a client's response to the request it answers; it
// reports false when no request of ours awaits it.
func (cr *clientRequests) answered(m *jsonrpc.Message) bool {
	cr.mu.Lock()
	ch, ok := cr.pending[jsonrpc.IDKey(m.ID)]
	delete(cr.pending, jsonrpc.IDKey(m.ID))
	cr.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// fail ends every request awaiting the client's answer, and any asked
// later.
func (cr *clientRequests) fail() {
	cr.mu.Lock()
	cr.closed = true
	pending := cr.pending
	cr.pending = nil
	cr.mu.Unlock()
	for _, ch := range pending {
		ch <- nil
	}
}

// clientHas reports whether the session's client declared capability name
// in initialize.
func (s *Session) clientHas(name string) bool {
	s.mu.Lock()
	caps := s.clientCaps
	s.mu.Unlock()
	return gjson.GetBytes(caps, name).Exists()
}

// setClientCaps records the capabilities from the client's initialize.
func (s *Session) setClientCaps(caps json.RawMessage) {
	s.mu.Lock()
	s.clientCaps = append(json.RawMessage(nil), caps...)
	s.mu.Unlock()
}
