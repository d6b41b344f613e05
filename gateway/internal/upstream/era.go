package upstream

// Both revisions upstream. Every upstream has its 2025-11-25 session
// (initialize), which serves session clients and is the fallback. A
// streamable-HTTP upstream is also probed with server/discover on a
// second, sessionless connection: when it speaks 2026-07-28, the
// stateless requests of stateless clients go there with the client's own
// _meta and the revision's headers, so the upstream's input_required
// results, requestState and caching hints reach the client unchanged.
// The probe's outcome is remembered for the connection's life (probed
// again after a reconnect); mcpx.protocol "2025-11-25" turns it off.
//
// A stdio upstream's lane is a second process of its command, started on
// the first stateless request (stdio_lane.go); where it has none, a
// stateless request shares the session's pipe, and reaches it as the
// client sent it (see statelessParams).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstreamhttp"
)

// lanes are an upstream's connections of the 2026-07-28 revision: the
// lane beside its session where the server speaks that revision too, or
// its only connection where it speaks nothing older (stateless_only.go).
// They decide which connection a stateless client's request goes to.
type lanes struct {
	name   string
	cfg    config.ServerConfig
	limits config.Limits
	log    hclog.Logger
	hs     *handshake   // server/discover and the gateway's _meta
	decl   *declared    // the tool a tools/call names, for its headers
	h      connHandlers // the shared process's, for a stdio lane's process
	// opened is told of a new lane (ListenStream.laneOpened); set once,
	// before Run
	opened func()

	mu   sync.RWMutex
	lane conn // nil when there is none
	// A stdio upstream's lane is probed on demand (stdio_lane.go).
	probe  sync.Mutex  // one probe at a time
	probed atomic.Bool // the outcome is in lane
	// only: the upstream speaks only 2026-07-28, remembered across
	// reconnects (stateless_only.go)
	only atomic.Bool
}

func newLanes(name string, cfg config.ServerConfig, lim config.Limits, log hclog.Logger, hs *handshake, decl *declared, h connHandlers) *lanes {
	return &lanes{name: name, cfg: cfg, limits: lim, log: log, hs: hs, decl: decl, h: h, opened: func() {}}
}

// current is the lane, nil when there is none.
func (l *lanes) current() conn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lane
}

// probeHTTP opens the stateless lane of a streamable-HTTP upstream,
// or returns nil when the upstream does not speak 2026-07-28 (or config
// says not to ask).
func (l *lanes) probeHTTP(ctx context.Context) conn {
	if l.cfg.Kind() != config.TypeStreamableHTTP || l.cfg.Mcpx.Protocol == mcp.ProtocolVersion20251125 {
		return nil
	}
	tc := upstreamHTTPConfig(l.cfg, l.limits, l.log, connHandlers{
		// progress of a call on this lane
		notification: l.h.notification,
	})
	sh, err := upstreamhttp.NewStreamable(tc)
	if err != nil {
		return nil
	}
	sh.SetProtocolVersion(mcp.ProtocolVersion20260728)
	c := newHTTPConn(l.name, l.log, sh)
	if _, err := l.hs.discover(ctx, c); err != nil {
		l.log.Debug("upstream does not speak 2026-07-28; stateless requests go to its session", "error", err)
		_ = c.close()
		return nil
	}
	l.log.Info("upstream speaks 2026-07-28: stateless requests go to it statelessly")
	return c
}

func stringsOf(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool {
		out = append(out, v.String())
		return true
	})
	return out
}

// laneHeader is the stateless revision's per-request headers: Mcp-Method,
// Mcp-Name, and Mcp-Param-* for the parameters tool binds to headers.
func laneHeader(tool json.RawMessage, method string, params json.RawMessage) http.Header {
	h := http.Header{}
	for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MCPMethod(method), params) {
		h.Set(k, v)
	}
	if len(tool) > 0 && gjson.GetBytes(tool, "inputSchema").Raw != "" {
		var t mcp.Tool
		if json.Unmarshal(tool, &t) == nil {
			for k, v := range mcp.GenerateParamHeaders(&t, params) {
				h.Set(k, v)
			}
		}
	}
	return h
}

// set replaces the lane, closing the old one.
func (l *lanes) set(c conn) {
	l.mu.Lock()
	old := l.lane
	l.lane = c
	l.probed.Store(false) // a stdio upstream's is probed again
	l.mu.Unlock()
	if old != nil {
		_ = old.close()
	}
	if c != nil && !l.only.Load() {
		l.opened() // a stateless-only upstream's opens with its connection
	}
}

// call sends a stateless client's request down lane: params as the
// client sent them but for the tool name, which is the upstream's.
func (l *lanes) call(ctx context.Context, lane conn, method string, params json.RawMessage) (json.RawMessage, error) {
	var tool json.RawMessage
	if _, ok := lane.(*httpConn); ok && method == "tools/call" {
		tool = l.decl.tool(gjson.GetBytes(params, "name").String())
	}
	res, err := callStateless(ctx, lane, tool, method, params)
	if err != nil {
		return nil, fmt.Errorf("upstream[%s] (2026-07-28): %w", l.name, err)
	}
	return withoutServerInfo(res), nil
}

// pathMetaServerInfo is where a 2026-07-28 result names its server:
// jsonrpc.MetaPath(mcp.MetaKeyServerInfo), spelled out to be a constant.
const pathMetaServerInfo = `_meta.io\.modelcontextprotocol/serverInfo`

// withoutServerInfo drops the server's identity from a 2026-07-28
// result: the gateway is its client's server and names itself there
// (the session room's decorate), and the go-sdk server's identity carries
// its icon as a data: URI of some kilobytes, which would otherwise cost
// every call a base64 decode and an artifact put in the engine, only to
// be overwritten.
func withoutServerInfo(res json.RawMessage) json.RawMessage {
	if !bytes.Contains(res, []byte(mcp.MetaKeyServerInfo)) {
		return res
	}
	out, err := sjson.DeleteBytes(res, pathMetaServerInfo)
	if err != nil {
		return res
	}
	if m := gjson.GetBytes(out, "_meta"); m.IsObject() && m.Raw == "{}" {
		out, _ = sjson.DeleteBytes(out, "_meta")
	}
	return out
}

// callStateless sends a 2026-07-28 request on c: on a remote upstream's
// connection with the revision's headers (tool, when not nil, is the
// definition of the tool a tools/call names); a stdio one's _meta says
// it all.
func callStateless(ctx context.Context, c conn, tool json.RawMessage, method string, params json.RawMessage) (json.RawMessage, error) {
	if hc, ok := c.(*httpConn); ok {
		return hc.callHeader(ctx, method, params, laneHeader(tool, method, params))
	}
	return c.call(ctx, method, params)
}

// withStatelessMeta gives params the protocol keys of the client's _meta
// that they lack: requests the gateway builds itself (a page of a list it
// gathers) carry the client's revision and capabilities upstream.
func withStatelessMeta(params, meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 {
		return params
	}
	if own := jsonrpc.ParseView(params).Get("_meta"); own.Raw == string(meta) {
		return params // the client's own request: it has them all
	}
	out := []byte(params)
	if len(out) == 0 {
		out = []byte("{}")
	}
	changed := false
	for _, k := range statelessMeta {
		p := jsonrpc.MetaPath(k)
		if v := gjson.GetBytes(meta, strings.TrimPrefix(p, "_meta.")); v.Exists() && !gjson.GetBytes(out, p).Exists() {
			if !changed {
				out = append([]byte(nil), out...) // never write into the client's bytes
				changed = true
			}
			out, _ = sjson.SetRawBytes(out, p, []byte(v.Raw))
		}
	}
	return out
}

// statelessMeta are the _meta keys of a stateless request that describe
// the client's protocol, not the call.
var statelessMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo, mcp.MetaKeyLogLevel}

// statelessParams prepares a stateless request's params for the
// session's connection. A stdio upstream gets them as they are: it decides the era per request too, so
// one that speaks 2026-07-28 serves the request in it (its input_required
// reaches the client unchanged) and an older one ignores the keys. A
// remote upstream's connection carries its negotiated version in the
// Mcp-Protocol-Version header, which must agree with _meta: there the
// keys are dropped and the request is one of the session era.
func (l *lanes) statelessParams(params json.RawMessage) json.RawMessage {
	if l.cfg.Kind() == config.TypeStdio || !bytes.Contains(params, []byte("io.modelcontextprotocol/")) {
		return params
	}
	out := []byte(params)
	for _, k := range statelessMeta {
		out, _ = sjson.DeleteBytes(out, jsonrpc.MetaPath(k))
	}
	if m := gjson.GetBytes(out, "_meta"); m.IsObject() && len(m.Map()) == 0 {
		out, _ = sjson.DeleteBytes(out, "_meta")
	}
	return out
}
