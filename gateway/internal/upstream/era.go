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
// A stdio upstream shares one pipe for both: it decides the era per
// request itself, so a stateless request reaches it as the client sent
// it (see statelessParams).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstreamhttp"
	config "github.com/mcpx-dev/mcpx/internal/gatewayconfig"
)

// probeStateless opens the stateless lane of a streamable-HTTP upstream,
// or returns nil when the upstream does not speak 2026-07-28 (or config
// says not to ask).
func (u *Upstream) probeStateless(ctx context.Context) conn {
	if u.Config.Kind() != config.TypeStreamableHTTP || u.Config.Mcpx.Protocol == mcp.ProtocolVersion20251125 {
		return nil
	}
	tc := upstreamHTTPConfig(u.Config, u.limits, u.Log, connHandlers{
		// progress of a call on this lane
		notification: u.notification,
	})
	sh, err := upstreamhttp.NewStreamable(tc)
	if err != nil {
		return nil
	}
	sh.SetProtocolVersion(mcp.ProtocolVersion20260728)
	c := newHTTPConn(u.Name, u.Log, sh)
	caps := u.clientCapabilities()
	params, _ := json.Marshal(map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: caps,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "mcpx", "version": u.version},
	}})
	res, err := c.callHeader(ctx, "server/discover", params, laneHeader(nil, "server/discover", params))
	if err != nil || !slices.Contains(stringsOf(gjson.GetBytes(res, "supportedVersions")), mcp.ProtocolVersion20260728) {
		u.Log.Debug("upstream does not speak 2026-07-28; stateless requests go to its session", "error", err)
		_ = c.close()
		return nil
	}
	u.Log.Info("upstream speaks 2026-07-28: stateless requests go to it statelessly")
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

// setLane replaces the upstream's stateless lane, closing the old one.
func (u *Upstream) setLane(c conn) {
	u.mu.Lock()
	old := u.lane
	u.lane = c
	u.stdLane.reset()
	u.mu.Unlock()
	if old != nil {
		_ = old.close()
	}
	if c != nil && !u.statelessOnly.Load() {
		u.laneOpened() // a stateless-only upstream's opens with its connection
	}
}

// callLane sends a stateless client's request down the stateless lane:
// params as the client sent them but for the tool name, which is the
// upstream's.
func (u *Upstream) callLane(ctx context.Context, lane conn, method string, params json.RawMessage) (json.RawMessage, error) {
	hc, ok := lane.(*httpConn)
	if !ok { // a stdio lane: _meta says it all
		res, err := lane.call(ctx, method, params)
		if err != nil {
			return nil, fmt.Errorf("upstream[%s] (2026-07-28): %w", u.Name, err)
		}
		return res, nil
	}
	var tool json.RawMessage
	if method == "tools/call" {
		name := gjson.GetBytes(params, "name").String()
		for _, def := range u.ToolDefs() {
			if gjson.GetBytes(def, "name").String() == name {
				tool = def
				break
			}
		}
	}
	res, err := hc.callHeader(ctx, method, params, laneHeader(tool, method, params))
	if err != nil {
		return nil, fmt.Errorf("upstream[%s] (2026-07-28): %w", u.Name, err)
	}
	return res, nil
}

// withStatelessMeta gives params the protocol keys of the client's _meta
// that they lack: requests the gateway builds itself (a page of a list it
// gathers) carry the client's revision and capabilities upstream.
func withStatelessMeta(params, meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 {
		return params
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

// statelessParams prepares a stateless request's params for u. A stdio
// upstream gets them as they are: it decides the era per request too, so
// one that speaks 2026-07-28 serves the request in it (its input_required
// reaches the client unchanged) and an older one ignores the keys. A
// remote upstream's connection carries its negotiated version in the
// Mcp-Protocol-Version header, which must agree with _meta: there the
// keys are dropped and the request is one of the session era.
func (u *Upstream) statelessParams(params json.RawMessage) json.RawMessage {
	if u.Config.Kind() == config.TypeStdio || !bytes.Contains(params, []byte("io.modelcontextprotocol/")) {
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

// HasLane reports whether the upstream has a stateless (2026-07-28)
// connection open.
func (u *Upstream) HasLane() bool {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.lane != nil
}
