package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// Call sends a request under the upstream's timeout, down its path: to
// a server that speaks only 2026-07-28 with the stateless _meta
// (stateless_only.go); a stateless client's to the lane (era.go); else
// to the process Instances picks (the shared one, a pool's, the
// session's or the principal's).
func (u *Upstream) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c, err := u.sup.available()
	if err != nil {
		return nil, err
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
	if stateless && !u.lanes.statelessOnly() && !u.inst.perUserCall(method) {
		// Before the call counts as in flight: a stdio upstream's lane
		// may start now, and what the upstream asks meanwhile (roots/list
		// right after its initialize) is not this call's. A per_user
		// server's calls skip it: the lane is every user's process.
		lane = u.lanes.forRequest(ctx)
	}
	if cl != nil {
		defer u.callers.enter(cl)()
	}
	if u.lanes.statelessOnly() {
		if cl != nil && u.inst.perUserCall(method) {
			r, err := u.inst.route(ctx, c, cl, stateless, method) // the principal's own process
			if err != nil {
				return nil, err
			}
			defer r.enter(cl)()
			c = r.c
		}
		ctx, cancel := context.WithTimeoutCause(ctx, u.Config.RequestTimeout(), jsonrpc.ErrUpstreamTimeout)
		defer cancel()
		res, err := u.lanes.callStatelessOnly(ctx, c, meta, stateless, method, params) // stateless_only.go
		return res, timeoutErr(ctx, err)
	}
	if cl != nil {
		if stateless {
			if lane != nil {
				ctx, cancel := context.WithTimeoutCause(ctx, u.Config.RequestTimeout(), jsonrpc.ErrUpstreamTimeout)
				defer cancel()
				res, err := u.lanes.call(ctx, lane, method, withStatelessMeta(params, meta))
				return res, timeoutErr(ctx, err)
			}
			params = u.lanes.statelessParams(params)
		}
	}
	// A pool's least busy process, or the session's or principal's own
	// (instances.go), which may start now, before the request's timeout.
	r, err := u.inst.route(ctx, c, cl, stateless, method)
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

// AnswersStateless reports whether a stateless client's request of method
// reaches u in the 2026-07-28 revision now (the stateless lane, or a
// server that speaks only that revision): the server then answers a need
// for input with an input_required result of its own, and sends the
// client no requests to bridge.
func (u *Upstream) AnswersStateless(method string) bool {
	if u.lanes.statelessOnly() {
		return true
	}
	return !u.inst.perUserCall(method) && u.lanes.forRequestOpen()
}

// Starts reports whether Start sends method to u without a goroutine of
// its own waiting for the answer: u is a stdio server served in the
// session era, and the call does not start a process (a per_session or
// per_user instance). Start is right either way; this tells a caller
// whether preparing for it on a goroutine that must not wait is worth
// it.
func (u *Upstream) Starts(method string) bool {
	return u.Config.Kind() == config.TypeStdio && !u.lanes.statelessOnly() && !u.inst.startsProcess(method)
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
	c := u.sup.conn()
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
	r, err := u.inst.route(ctx, c, cl, false, method)
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

// Notify sends a notification on the shared connection.
func (u *Upstream) Notify(ctx context.Context, method string, params json.RawMessage) error {
	c := u.sup.conn()
	if c == nil {
		return fmt.Errorf("upstream[%s]: %w", u.Name, jsonrpc.ErrUpstreamUnavailable)
	}
	return c.notify(ctx, method, params)
}

// timeoutErr names the timeout when ctx's deadline caused err.
func timeoutErr(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), jsonrpc.ErrUpstreamTimeout) && ctx.Err() != nil {
		return fmt.Errorf("no answer within the timeout: %w", jsonrpc.ErrUpstreamTimeout)
	}
	return err
}
