package session

// A tools/call of an upstream's tool: routed (router.Tools), allowed
// (the principal's per-tool rate limit), its arguments rewritten
// (artifacts.Service.RewriteArgs) and its progress token mapped
// (Progress), sent upstream, and its result transformed by the engine
// for the client's profile (artifacts.Service.Transform). The gateway's
// own tools and the generated resource tools are served by their rooms.
// A stdio call takes the same steps without a goroutine waiting for the
// upstream (call_start.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/store"
)

// callTool forwards a tools/call and passes the result through the engine.
func (s *Session) callTool(ctx context.Context, params json.RawMessage, related func([]byte)) (json.RawMessage, error) {
	g := s.rooms
	r, name, err := s.toolRoute(ctx, params)
	if err != nil {
		return nil, err
	}
	meta := gjson.GetBytes(params, "_meta")
	if g.Observer == nil && g.Tracer == nil && !hasHeaderTrace(ctx) {
		return s.forwardCall(ctx, r, name, params, meta, related, nil)
	}
	return s.observedCall(ctx, r, name, params, meta, related)
}

// toolRoute finds where a tools/call goes, and checks that the caller
// may call it now.
func (s *Session) toolRoute(ctx context.Context, params json.RawMessage) (r *router.Route, name string, err error) {
	g := s.rooms
	name = gjson.GetBytes(params, "name").String()
	r, ok := g.Tools.Route(name)
	if !ok {
		// a client that did not wait for initialize: let the upstreams
		// make their first attempt, then look again
		g.Ups.AwaitStart(ctx)
		if r, ok = g.Tools.Route(name); !ok {
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
func (s *Session) forwardCall(ctx context.Context, r *router.Route, name string, params json.RawMessage, meta gjson.Result, related func([]byte), oc *callOutcome) (json.RawMessage, error) {
	f := s.forwarding(r, name, params, gjson.GetBytes(params, "arguments"), meta, oc)
	switch {
	case r.Up == nil:
		return s.rooms.Art.Tool(ctx, s.reader(), r.Generated, f.args, s.rooms.Profiles.view(s.clientName(f.params)))
	case r.Generated != "":
		return s.rooms.Res.Tool(ctx, s.reader(), r, f.args, f.scope)
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
	s      *Session
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
func (s *Session) forwarding(r *router.Route, name string, params json.RawMessage, args, meta gjson.Result, oc *callOutcome) *forwarded {
	f := &forwarded{s: s, r: r, name: name, params: params, oc: oc}
	f.scope = store.Scope{TenantID: s.Tenant, SessionID: s.ID, UserID: s.User, TraceID: traceID(meta)}
	if args.Exists() {
		f.args = jsonrpc.Sub(params, args)
	}
	return f
}

// prepare makes the upstream request's params; release undoes what it
// registered once the call is over.
func (f *forwarded) prepare(ctx context.Context, meta gjson.Result, related func([]byte)) error {
	s, r, name := f.s, f.r, f.name
	orig := f.args
	var err error
	if f.args, err = s.rooms.Art.RewriteArgs(ctx, s.reader(), r.Args, s.injects(r), f.args); err != nil {
		return fmt.Errorf("tools/call %q: arguments: %w", name, err)
	}
	// The client's params go upstream as they are unless something in
	// them changes: the common call is neither copied nor re-encoded.
	up := []byte(f.params)
	if r.Tool != name {
		if up, err = sjson.SetBytes(up, "name", r.Tool); err != nil {
			return fmt.Errorf("tools/call: %w: %w", jsonrpc.ErrBadParams, err)
		}
	}
	if len(f.args) > 0 && !sameBytes(f.args, orig) {
		if up, err = sjson.SetRawBytes(up, "arguments", f.args); err != nil {
			return fmt.Errorf("tools/call: %w: %w", jsonrpc.ErrBadParams, err)
		}
	}
	if tok := meta.Get("progressToken"); tok.Exists() {
		f.token = s.rooms.Progress.Map(s, json.RawMessage(tok.Raw), related)
		if up, err = sjson.SetRawBytes(up, "_meta.progressToken", []byte(f.token)); err != nil {
			f.release()
			return fmt.Errorf("tools/call: %w: %w", jsonrpc.ErrBadParams, err)
		}
	}
	if f.oc != nil {
		if up, err = f.oc.propagate(up); err != nil {
			f.release()
			return fmt.Errorf("tools/call: %w: %w", jsonrpc.ErrBadParams, err)
		}
	}
	f.up = up
	return nil
}

func (f *forwarded) release() {
	if f.token != "" {
		f.s.rooms.Progress.Unmap(f.token)
		f.token = ""
	}
}

// finish transforms the upstream's answer raw (or names err).
func (f *forwarded) finish(ctx context.Context, raw json.RawMessage, err error) (json.RawMessage, error) {
	s, r := f.s, f.r
	if err != nil {
		return nil, fmt.Errorf("tools/call %q on %s: %w", f.name, r.Up.Name, err)
	}
	view := s.rooms.Profiles.view(s.clientName(f.params))
	res, err := s.rooms.Art.Transform(ctx, s.reader(), engine.Call{Server: r.Up.Name, Tool: r.Tool, Arguments: f.args, Scope: f.scope, OutputSchema: r.Output, View: view}, raw)
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

// injects reports whether a call of r's tool gets the session's user as
// its "username" argument: the tool's schema declares it, and the user is
// authenticated.
func (s *Session) injects(r *router.Route) bool { return r.Username && s.User != "" }

// traceID takes a trace id from a request's _meta: "traceId",
// "trace_id", or the trace-id field of a W3C "traceparent".
func traceID(meta gjson.Result) string {
	if !meta.IsObject() {
		return ""
	}
	for _, k := range []string{"traceId", "trace_id", "mcpx/trace_id"} {
		if v := meta.Get(k); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	if tp := meta.Get("traceparent").String(); tp != "" {
		if parts := strings.Split(tp, "-"); len(parts) >= 4 {
			return parts[1]
		}
	}
	return ""
}
