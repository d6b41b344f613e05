package session

// A tools/call over stdio without a goroutine waiting for the upstream.
// The stdio hop was the relay's two copies plus, per call, two goroutine
// hand-offs: the client's reader handed the reading on and
// ran the call, which then waited for the upstream's reader to wake it.
// Each hand-off is a thread woken on another CPU. A call forwarded to a
// stdio server now goes out from the reader itself (Upstream.Start), and
// the upstream's reader, which has the answer, transforms it and writes
// the response: the goroutines of a byte relay, with the engine between.
//
// What the gateway keeps of a call besides (its observation, its entry
// among the calls a client may cancel) is done while the server works:
// after the request is written, and after the response is. A call has no
// context of its own unless something asks for one (a server request
// relayed on its behalf, a transform on a worker): the session's does,
// and the client's cancellation reaches the call through Start's cancel.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
)

// inlineResultBytes is the largest result transformed on the goroutine
// that read it from the upstream (that connection's reader). The
// engine's work on it takes microseconds, less than a hand-off to
// another goroutine; a larger one goes to a worker, and the reader goes
// on with the upstream's other messages meanwhile.
const inlineResultBytes = 4 << 10

// A tool whose small results keep the upstream's reader busy is no
// longer transformed there: one whose result stored an artifact (the
// store's write: a file, an S3 request), or that took longer than
// inlineTransformBudget (a slow plugin) inlineSlowLimit times. A limit
// rather than the first time: on a loaded machine the thread of a
// transform of microseconds may be preempted for a while.
const (
	inlineTransformBudget = time.Millisecond
	inlineSlowLimit       = 3
)

// inline reports whether a result of n bytes of r's tool is transformed
// where it was read.
func inline(r *router.Route, n int) bool {
	return n <= inlineResultBytes && r.Slow.Load() < inlineSlowLimit
}

// transformed records how an inline transform of r's tool went.
func transformed(r *router.Route, took time.Duration, stored bool) {
	switch {
	case stored:
		r.Slow.Store(inlineSlowLimit)
	case took > inlineTransformBudget:
		r.Slow.Add(1)
	}
}

// StartCall serves request m without a goroutine that waits for the
// upstream, where it can: a session-era tools/call of a stdio server's
// tool is prepared on the caller's goroutine (which must not wait: it
// is the reader of the client's requests), sent with Upstream.Start,
// and finished on the goroutine that has the answer, or handed to
// offload when the result is large. send gets the response, as
// HandleMessage would return it, and then finished runs, once the call's
// bookkeeping is done. StartCall reports false, doing nothing, for any
// other request; HandleMessage serves those.
func (s *Session) StartCall(ctx context.Context, m *jsonrpc.Message, offload func(func()), send func([]byte), finished func()) bool {
	g := s.rooms
	if m.Method != "tools/call" || s.stateless || g.Tracer != nil || hasHeaderTrace(ctx) {
		return false
	}
	var name, args, meta gjson.Result
	jsonrpc.ParseView(m.Params).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "name":
			name = v
		case "arguments":
			args = v
		case "_meta":
			meta = v
		}
		return true
	})
	if meta.Get(keyMetaVersion).Exists() || trace.SpanContextFromContext(ctx).IsValid() {
		return false // a stateless request (era.go); a trace to carry upstream (observe)
	}
	r, ok := g.Tools.Route(name.String())
	if !ok || r.Generated != "" || !r.Up.Starts("tools/call") {
		return false // Upstreams.AwaitStart, the gateway's own tools and the rest wait
	}
	f := s.forwarding(r, name.String(), m.Params, args, meta, nil)
	if artifacts.RewritesArgs(r.Args, s.injects(r), f.args) {
		return false // it may read artifacts
	}
	// From here on as HandleMessage, serve, request and callTool do, in
	// order.
	c := &startedCall{s: s, m: m, r: r, f: f, key: jsonrpc.IDKey(m.ID), send: send, finished: finished, offload: offload}
	c.steps.Store(2)
	c.parent = withCaller(ctx, s, nil)
	callerFrom(c.parent).call = c
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		send(jsonrpc.EncodeError(m.ID, fmt.Errorf("session closed: %w", jsonrpc.ErrClosed)))
		finished()
		return true
	}
	s.inflight[c.key] = c.cancel
	s.mu.Unlock()
	g.Clients.Arrived(nil)
	var start time.Time
	if g.Observer != nil {
		start = time.Now()
	}
	refused := s.allowToolCall(r.Server(), r.Tool)
	if refused != nil {
		c.answered(nil, fmt.Errorf("tools/call %q: %w", f.name, refused))
	} else if err := f.prepare(c.parent, meta, nil); err != nil {
		c.answered(nil, err)
	} else {
		c.setCancel(r.Up.Start(c.parent, "tools/call", f.up, c.answered))
	}
	// The request is out: what follows no longer delays the server. A
	// call the rate limit refused is not observed, as HandleMessage does.
	if g.Observer != nil && refused == nil {
		_, c.ob = s.observe(c.parent, r, meta)
		c.ob.start = start
		f.oc = c.ob.oc
	}
	c.arrive()
	return true
}

// startedCall is a tools/call that StartCall sent.
type startedCall struct {
	s        *Session
	m        *jsonrpc.Message
	r        *router.Route
	f        *forwarded
	ob       *observation // nil: not observed
	key      string       // m's id, among the session's calls in flight
	parent   context.Context
	send     func([]byte)
	finished func()
	offload  func(func())

	// steps counts down the two things complete waits for: the answer,
	// and StartCall's work after the request went out. Whichever is
	// last runs complete.
	steps atomic.Int32
	raw   json.RawMessage
	err   error

	mu       sync.Mutex
	cause    error           // why the client cancelled the call; nil: it did not
	stop     func()          // Start's cancel; nil until it returned
	ctx      context.Context // made by context, nil until asked for
	ctxEnd   context.CancelCauseFunc
	complete bool // the response is decided: context gives a done one
}

// answered is Start's done.
func (c *startedCall) answered(raw json.RawMessage, err error) {
	c.raw, c.err = raw, err
	c.arrive()
}

// arrive counts one of complete's two steps down.
func (c *startedCall) arrive() {
	if c.steps.Add(-1) != 0 {
		return
	}
	if c.err == nil && !inline(c.r, len(c.raw)) {
		c.offload(func() { c.finish(false) })
		return
	}
	c.finish(c.err == nil)
}

// cancel ends the call at the client's request, or its session's end.
func (c *startedCall) cancel(cause error) {
	c.mu.Lock()
	if c.cause != nil || c.complete {
		c.mu.Unlock()
		return
	}
	c.cause = cause
	stop, end := c.stop, c.ctxEnd
	c.mu.Unlock()
	if end != nil {
		end(cause)
	}
	if stop != nil {
		stop()
	}
}

// setCancel keeps Start's cancel, and uses it at once when the call was
// cancelled while Start ran.
func (c *startedCall) setCancel(stop func()) {
	c.mu.Lock()
	c.stop = stop
	cancelled := c.cause != nil
	c.mu.Unlock()
	if cancelled {
		stop()
	}
}

// context is the call's own context, made when first asked for: it
// ends when the call does or is cancelled, with the cause.
func (c *startedCall) context() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.ctxEnd = context.WithCancelCause(c.parent)
		switch {
		case c.cause != nil:
			c.ctxEnd(c.cause)
		case c.complete:
			c.ctxEnd(nil)
		}
	}
	return c.ctx
}

// finish transforms the answer, sends the response, then does the
// call's bookkeeping; timed: on the upstream's reader, where the time it
// takes counts.
func (c *startedCall) finish(timed bool) {
	s, f := c.s, c.f
	ctx := c.parent
	if !timed {
		ctx = c.context() // a transform on a worker ends when the call is cancelled
	}
	var start time.Time
	if timed {
		start = time.Now()
	}
	out, err := f.finish(ctx, c.raw, c.err)
	if timed {
		transformed(c.r, time.Since(start), f.stored)
	}
	c.mu.Lock()
	c.complete = true
	cause, end := c.cause, c.ctxEnd
	c.mu.Unlock()
	s.mu.Lock()
	delete(s.inflight, c.key)
	s.mu.Unlock()
	c.send(s.respondCause(c.m, out, err, cause))
	// The response is out: the rest no longer delays the client.
	if end != nil {
		end(nil)
	}
	f.release()
	if c.ob != nil {
		c.ob.end(out, err)
	}
	c.finished()
}
