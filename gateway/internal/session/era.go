package session

// MCP 2026-07-28 downstream, decided per request as mcp-go v1.2.1's server
// does: a request whose _meta carries io.modelcontextprotocol/protocolVersion
// (or, over HTTP, whose Mcp-Protocol-Version header names 2026-07-28 or
// later) is served statelessly: the protocol version and the client's
// capabilities come from its _meta, there is no initialize and no
// session, and its result carries resultType, the server's identity in
// _meta and, for lists and reads, ttlMs and cacheScope. Anything else is
// the 2025-11-25 session era, as before. Both run side by side on one
// stdio connection or HTTP endpoint.
//
// Artifact scope without a session (docs/design.md, "Protocol revisions",
// "Scope without sessions"): a stateless request's artifacts are scoped
// to its principal (the HTTP bearer token's identity; "" when
// unauthenticated) and the trace id of the W3C traceparent in its _meta;
// who may read them is the artifact room's rule (artifacts/access.go).
// Over stdio a stateless request is served on the stdio session and
// shares its scope. The trace id is recorded in the scope of what a
// stateless request stores.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
)

// statelessProtocolVersions are the stateless protocol revisions the
// gateway serves, newest first.
var statelessProtocolVersions = []string{mcp.ProtocolVersion20260728}

var (
	pathMetaVersion    = jsonrpc.MetaPath(mcp.MetaKeyProtocolVersion)
	pathMetaClientCaps = jsonrpc.MetaPath(mcp.MetaKeyClientCapabilities)
	// keyMetaVersion is pathMetaVersion within _meta
	keyMetaVersion = strings.TrimPrefix(pathMetaVersion, "_meta.")
)

// RequestVersion is the protocol version a request declares in _meta,
// or "" (the session era).
func RequestVersion(params json.RawMessage) string {
	return gjson.GetBytes(params, pathMetaVersion).String()
}

// removedStateless are the session-era methods the stateless revision
// dropped: they are "method not found" there.
var removedStateless = []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// serve answers one request in its era.
func (s *Session) serve(ctx context.Context, m *jsonrpc.Message, related func([]byte)) (json.RawMessage, error) {
	if !s.stateless && RequestVersion(m.Params) == "" {
		return s.request(withCaller(ctx, s, related), m, related)
	}
	return s.serveStateless(ctx, m, related)
}

// serveStateless answers a 2026-07-28 request.
func (s *Session) serveStateless(ctx context.Context, m *jsonrpc.Message, related func([]byte)) (json.RawMessage, error) {
	if !gjson.GetBytes(m.Params, "_meta").IsObject() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing _meta: a " + mcp.ProtocolVersion20260728 + " request carries " + mcp.MetaKeyProtocolVersion + " and " + mcp.MetaKeyClientCapabilities + " in params._meta"}
	}
	v := RequestVersion(m.Params)
	if v == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing _meta field " + mcp.MetaKeyProtocolVersion}
	}
	if !slices.Contains(statelessProtocolVersions, v) {
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: append(slices.Clone(statelessProtocolVersions), supportedDownstream...), Requested: v})
		return nil, &jsonrpc.Error{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION, Message: fmt.Sprintf("unsupported protocol version %q", v), Data: data}
	}
	caps := gjson.GetBytes(m.Params, pathMetaClientCaps)
	if !caps.IsObject() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing _meta field " + mcp.MetaKeyClientCapabilities}
	}
	if slices.Contains(removedStateless, m.Method) {
		return nil, fmt.Errorf("%w: %s was removed in protocol version %s", jsonrpc.ErrMethodNotFound, m.Method, v)
	}
	s.rooms.Clients.Arrived(json.RawMessage(caps.Raw)) // before waiting: the upstreams' initialize may wait for it
	s.rooms.Ups.AwaitStart(ctx)
	var (
		res json.RawMessage
		err error
	)
	if m.Method == subscriptions.MethodListen {
		emit := related
		if emit == nil {
			emit = s.Send
		}
		res, err = s.rooms.Listen.Serve(ctx, s, s.ID, s.User, m, emit)
	} else if m.Method == "server/discover" {
		d := s.rooms.Describe(true)
		d["supportedVersions"] = append(slices.Clone(statelessProtocolVersions), supportedDownstream...)
		res, err = json.Marshal(d)
	} else if slices.Contains(bridgedMethods, m.Method) && !s.answeredStateless(m) {
		res, err = s.serveBridged(ctx, m, related)
	} else {
		ctx = withCaller(ctx, s, related)
		cl := callerFrom(ctx)
		cl.stateless = true
		cl.meta = json.RawMessage(gjson.GetBytes(m.Params, "_meta").Raw)
		res, err = s.request(ctx, m, related)
	}
	if err != nil {
		return nil, err
	}
	return s.rooms.decorate(m.Method, m.Params, res), nil
}

// answeredStateless reports whether a stateless tools/call reaches its
// upstream in the 2026-07-28 revision (Upstream.AnswersStateless): such
// a server asks for input in its own result, so the call needs no
// bridge, whose goroutine and parking would cost every call a hand-off.
func (s *Session) answeredStateless(m *jsonrpc.Message) bool {
	if m.Method != "tools/call" {
		return false
	}
	r, ok := s.rooms.Tools.Route(gjson.GetBytes(m.Params, "name").String())
	return ok && r.Up != nil && r.Generated == "" && r.Up.AnswersStateless(m.Method)
}

// cacheable are the methods whose results carry ttlMs and cacheScope.
var cacheable = []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", "server/discover"}

// artifactTTLMs is the freshness of an artifact's resources/read: its
// bytes never change (the id is their hash).
const artifactTTLMs = 365 * 24 * 3600 * 1000

// decorate adds what a stateless result carries: resultType (an
// upstream's own value kept), the gateway's identity in _meta, and for
// lists and reads the caching hints (an upstream's own kept; by default
// 0 ms and "private", fail-closed as mcp-go's server does; an artifact's
// read is immutable and fresh for a year).
func (r *Rooms) decorate(method string, params, res json.RawMessage) json.RawMessage {
	info := serverInfoJSON(r.Version)
	if out, ok := appendDecoration(method, res, info); ok {
		return out
	}
	out := []byte(res)
	reqs := gjson.GetBytes(out, "inputRequests")
	if !gjson.GetBytes(out, "resultType").Exists() {
		// a go-sdk server answers a session-era caller's second round
		// with its input_required result, less the resultType
		rt := "complete"
		if reqs.IsObject() {
			rt = "input_required"
		}
		out, _ = sjson.SetBytes(out, "resultType", rt)
	}
	if reqs.IsObject() {
		out = withInputParams(out, reqs)
	}
	{
		p := jsonrpc.MetaPath(mcp.MetaKeyServerInfo)
		// the gateway is the client's server, whatever answered upstream
		out, _ = sjson.SetRawBytes(out, p, info)
	}
	if slices.Contains(cacheable, method) {
		ttl, scope := int64(0), "private"
		if method == "resources/read" {
			if _, ok := artifacts.ID(gjson.GetBytes(params, "uri").String()); ok {
				ttl = artifactTTLMs
			}
		}
		if !gjson.GetBytes(out, "ttlMs").Exists() {
			out, _ = sjson.SetBytes(out, "ttlMs", ttl)
		}
		if !gjson.GetBytes(out, "cacheScope").Exists() {
			out, _ = sjson.SetBytes(out, "cacheScope", scope)
		}
	}
	return out
}

// withInputParams gives every entry of res's inputRequests (reqs) params,
// an empty object where the upstream wrote none (mcp-go writes roots/list
// so): the go-sdk client (v1.8.0) decodes each entry's params and fails
// the whole call on an absent one ("unexpected end of JSON input").
func withInputParams(res []byte, reqs gjson.Result) []byte {
	missing := false
	reqs.ForEach(func(_, v gjson.Result) bool {
		missing = v.IsObject() && !v.Get("params").Exists()
		return !missing
	})
	if !missing {
		return res
	}
	// The object is written whole: its keys are the upstream's, which an
	// sjson path would have to escape.
	obj := []byte{'{'}
	reqs.ForEach(func(k, v gjson.Result) bool {
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		obj = append(append(obj, k.Raw...), ':')
		entry := []byte(v.Raw)
		if v.IsObject() && !v.Get("params").Exists() {
			entry, _ = sjson.SetRawBytes(entry, "params", []byte(`{}`))
		}
		obj = append(obj, entry...)
		return true
	})
	res, _ = sjson.SetRawBytes(res, "inputRequests", append(obj, '}'))
	return res
}

// appendDecoration decorates the common result in one append instead of
// a parse and a copy per field: an object that has no resultType, no
// inputRequests and no _meta, of a method without caching hints. It
// reports false, doing nothing, for any other result; decorate's general
// path serves those (a key written with \u escapes included).
func appendDecoration(method string, res json.RawMessage, info []byte) (json.RawMessage, bool) {
	if slices.Contains(cacheable, method) {
		return nil, false
	}
	body := bytes.TrimRight(res, " \t\r\n")
	if len(body) < 2 || body[len(body)-1] != '}' || bytes.TrimLeft(body, " \t\r\n")[0] != '{' {
		return nil, false
	}
	for _, k := range [...]string{`"resultType"`, `"inputRequests"`, `"_meta"`, `\u`} {
		if bytes.Contains(body, []byte(k)) {
			return nil, false
		}
	}
	empty := len(bytes.TrimSpace(body[bytes.IndexByte(body, '{')+1:len(body)-1])) == 0
	out := make([]byte, 0, len(body)+len(decorationHead)+len(info)+3)
	out = append(out, body[:len(body)-1]...)
	if !empty {
		out = append(out, ',')
	}
	out = append(out, decorationHead...)
	out = append(out, info...)
	return append(out, "}}"...), true
}

// decorationHead opens what appendDecoration adds: a complete result's
// resultType and the _meta that names the gateway.
const decorationHead = `"resultType":"complete","_meta":{"` + mcp.MetaKeyServerInfo + `":`

// serverInfoJSON is the gateway's identity in a stateless result's _meta.
func serverInfoJSON(version string) []byte {
	out := make([]byte, 0, 32+len(version))
	out = append(out, `{"name":"mcpx","version":`...)
	return append(jsonstr.AppendString(out, version), '}')
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// statelessCapabilities drops from caps what the stateless revision does
// not have: logging/setLevel.
func statelessCapabilities(caps map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range caps {
		if k != "logging" {
			out[k] = v
		}
	}
	return out
}

// NewStateless is the Session of one stateless HTTP request of who,
// served with r: not registered (it hears no broadcasts), no id.
func NewStateless(r *Rooms, who Identity) *Session {
	return &Session{
		User:      who.User,
		Tenant:    who.Tenant,
		limiter:   who.Limiter,
		rooms:     r,
		out:       func([]byte) {},
		stateless: true,
		inflight:  map[string]context.CancelCauseFunc{},
		subs:      map[string]struct{}{},
	}
}

// reader is who s is to the artifact room.
func (s *Session) reader() artifacts.Reader {
	return artifacts.Reader{Tenant: s.Tenant, User: s.User, Session: s.ID, ReadsStore: s.readsStore, Shown: &s.shown}
}

// Describe is what initialize and server/discover tell a client of the
// gateway: capabilities, serverInfo and instructions. The stateless
// revision has no logging/setLevel and hears of list changes and resource
// updates on subscriptions/listen (subscriptions.Listeners).
func (r *Rooms) Describe(stateless bool) map[string]any {
	caps := map[string]any{
		"tools":     map[string]any{"listChanged": true},
		"resources": map[string]any{"subscribe": true, "listChanged": true},
		"logging":   map[string]any{},
	}
	if r.Ups.Offer("prompts") {
		caps["prompts"] = map[string]any{"listChanged": true}
	}
	var instructions []string
	for _, u := range r.Ups.All() {
		if u.Capability("completions") {
			caps["completions"] = map[string]any{}
		}
		if in := u.Instructions(); in != "" {
			if r.Ups.Single() {
				instructions = append(instructions, in)
			} else {
				instructions = append(instructions, u.Name+": "+in)
			}
		}
	}
	if stateless {
		caps = statelessCapabilities(caps)
	}
	res := map[string]any{
		"capabilities": caps,
		"serverInfo":   map[string]any{"name": "mcpx", "title": "mcpx gateway", "version": r.Version},
	}
	text := r.Art.Instructions()
	if len(instructions) > 0 {
		text = strings.Join(instructions, "\n") + "\n\n" + text
	}
	res["instructions"] = text
	return res
}
