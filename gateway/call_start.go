package gateway

// A tools/call over stdio without a goroutine waiting for the upstream
// (issue 18). The stdio hop was the relay's two copies plus, per call,
// two goroutine hand-offs: the client's reader handed the reading on and
// ran the call, which then waited for the upstream's reader to wake it.
// Each hand-off is a thread woken on another CPU. A call forwarded to a
// stdio server now goes out from the reader itself (Upstream.Start), and
// the upstream's reader, which has the answer, transforms it and writes
// the response: the goroutines of a byte relay, with the engine between.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
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
func (r *toolRoute) inline(n int) bool {
	return n <= inlineResultBytes && r.slow.Load() < inlineSlowLimit
}

// transformed records how an inline transform of r's tool went.
func (r *toolRoute) transformed(took time.Duration, stored bool) {
	switch {
	case stored:
		r.slow.Store(inlineSlowLimit)
	case took > inlineTransformBudget:
		r.slow.Add(1)
	}
}

// startCall serves request m without a goroutine that waits for the
// upstream, where it can: a session-era tools/call of a stdio server's
// tool is prepared on the caller's goroutine (which must not wait: it
// is the reader of the client's requests), sent with Upstream.Start,
// and finished on the goroutine that has the answer, or handed to
// offload when the result is large. done gets the response, as handle
// would return it. startCall reports false, doing nothing, for any
// other request; handle serves those.
func (s *session) startCall(ctx context.Context, m *message, offload func(func()), done func([]byte)) bool {
	g := s.g
	if m.Method != "tools/call" || s.stateless || g.tracer != nil || hasHeaderTrace(ctx) || requestVersion(m.Params) != "" {
		return false
	}
	name := gjson.GetBytes(m.Params, "name").String()
	r, ok := g.route(name)
	if !ok || r.generated != "" || !r.up.Starts("tools/call") {
		return false // awaitStart, the gateway's own tools and the rest wait
	}
	meta := gjson.GetBytes(m.Params, "_meta")
	f := s.forwarding(r, name, m.Params, meta, nil)
	if s.rewritesArgs(r, f.args) {
		return false // it may read artifacts
	}
	// From here on as handle, serve, request and callTool do, in order.
	ctx, end, closed := s.begin(ctx, m)
	if closed != nil {
		done(closed)
		return true
	}
	reply := func(res json.RawMessage, err error) {
		resp := s.respond(ctx, m, res, err)
		end()
		done(resp)
	}
	ctx = withCaller(ctx, s, nil)
	g.clientArrived(nil)
	if err := s.allowToolCall(r.serverName(), r.tool); err != nil {
		reply(nil, fmt.Errorf("tools/call %q: %w", name, err))
		return true
	}
	var ob *observation
	if g.observer != nil {
		ctx, ob = s.observe(ctx, r, meta)
		f.oc = ob.oc
	}
	finish := func(out json.RawMessage, err error) {
		if ob != nil {
			ob.end(out, err)
		}
		reply(out, err)
	}
	if err := f.prepare(ctx, meta, nil); err != nil {
		finish(nil, err)
		return true
	}
	// timed: on the upstream's reader, where the time it takes counts
	complete := func(raw json.RawMessage, err error, timed bool) {
		var start time.Time
		if timed {
			start = time.Now()
		}
		out, err := f.finish(ctx, raw, err)
		if timed {
			r.transformed(time.Since(start), f.stored)
		}
		f.release()
		finish(out, err)
	}
	r.up.Start(ctx, "tools/call", f.up, func(raw json.RawMessage, err error) {
		if err == nil && !r.inline(len(raw)) {
			offload(func() { complete(raw, nil, false) })
			return
		}
		complete(raw, err, err == nil)
	})
	return true
}
