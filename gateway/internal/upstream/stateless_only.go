package upstream

// Upstreams that speak only 2026-07-28: no initialize, no session. When an
// upstream refuses initialize, the gateway asks server/discover on the
// same connection (a streamable-HTTP upstream: on a sessionless one); when
// that lists 2026-07-28 the upstream is served statelessly for everyone:
// its discover result stands in for initialize's, every request the
// gateway sends it carries the stateless _meta (a stateless client's own;
// the gateway's for session clients and its own requests), and a session
// client's call that comes back input_required is bridged into
// server-to-client requests (input_required.go). The outcome is
// remembered for the upstream, so a reconnect goes to server/discover
// first; mcpx.protocol "2026-07-28" starts there. initialize comes first
// for an upstream not known to be stateless-only because a server of the
// older revision need not answer a method it does not know, which would
// stall every start-up for the upstream's timeout.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
)

// errNotStateless says an upstream does not speak 2026-07-28.
var errNotStateless = errors.New("the server does not list " + mcp.ProtocolVersion20260728 + " in server/discover")

// startsStateless reports whether u's next connection begins with
// server/discover.
func (u *Upstream) startsStateless() bool {
	return u.Config.Mcpx.Protocol == mcp.ProtocolVersion20260728 || u.statelessOnly.Load()
}

// gatewayMeta is the stateless _meta of the requests the gateway sends u
// for itself and for session clients.
func (u *Upstream) gatewayMeta() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: u.clientCapabilities(),
		mcp.MetaKeyClientInfo:         map[string]any{"name": "mcpx", "version": u.version},
	})
	return b
}

// connectStateless makes c (never initialized) u's stateless connection,
// or, for a streamable-HTTP upstream, closes it and opens a sessionless
// one. It returns the connection and the server/discover result.
func (u *Upstream) connectStateless(ctx context.Context, c conn) (conn, json.RawMessage, error) {
	if _, ok := c.(*httpConn); ok {
		_ = c.close()
		if c = u.probeStateless(ctx); c == nil {
			return nil, nil, fmt.Errorf("upstream[%s]: %w", u.Name, errNotStateless)
		}
	}
	res, err := u.discover(ctx, c)
	if err != nil {
		_ = c.close()
		return nil, nil, fmt.Errorf("upstream[%s]: server/discover: %w", u.Name, err)
	}
	u.statelessOnly.Store(true)
	u.mu.Lock()
	u.c = c
	u.lane = c
	u.init = res
	u.caps = gjson.GetBytes(res, "capabilities")
	u.protocol = mcp.ProtocolVersion20260728
	u.state = StateReady
	u.lastErr = nil
	u.mu.Unlock()
	u.stdLane.probed.Store(true)
	if err := u.LoadTools(ctx); err != nil {
		u.Log.Warn("tools/list failed; the server's tools are not offered", "error", err)
	}
	u.Log.Info("upstream ready; it speaks only 2026-07-28 and is served statelessly", "tools", len(u.ToolDefs()))
	u.host.Ready(u)
	return c, res, nil
}

// discover asks c server/discover with the gateway's _meta; errNotStateless
// when the answer lists no 2026-07-28.
func (u *Upstream) discover(ctx context.Context, c conn) (json.RawMessage, error) {
	params, _ := json.Marshal(map[string]any{"_meta": json.RawMessage(u.gatewayMeta())})
	res, err := u.callLane(ctx, c, "server/discover", params)
	if err == nil && !slices.Contains(stringsOf(gjson.GetBytes(res, "supportedVersions")), mcp.ProtocolVersion20260728) {
		err = errNotStateless
	}
	return res, err
}

// callStatelessOnly sends a request to a stateless-only upstream: with the
// stateless client's _meta, or the gateway's, bridging an input_required
// result for a session client.
func (u *Upstream) callStatelessOnly(ctx context.Context, c conn, callerMeta json.RawMessage, stateless bool, method string, params json.RawMessage) (json.RawMessage, error) {
	meta := u.gatewayMeta()
	if stateless {
		meta = callerMeta
	}
	params = withStatelessMeta(params, meta)
	res, err := u.callLane(ctx, c, method, params)
	if err == nil && inputRequired(res) && !stateless {
		res, err = u.fulfilForSession(ctx, method, params, res, func(p json.RawMessage) (json.RawMessage, error) {
			return u.callLane(ctx, c, method, p)
		})
	}
	return res, err
}
