package upstream

// A stdio upstream's stateless lane. A server decides a request's era by
// its pipe: one that was initialized as 2025-11-25 serves even a request
// that carries 2026-07-28 _meta in the old era (the go-sdk server then
// fulfils its own input_required with server-to-client requests and hides
// the input requests' keys and its requestState). So, as for a
// streamable-HTTP upstream, stateless clients' requests go to a second
// connection that is never initialized: a second process of the same
// command, started on the first stateless request and kept when it
// answers server/discover with 2026-07-28. When it does not, the process
// is stopped and stateless requests share the session pipe (bridged to
// input_required, the gateway's bridge.go); either outcome is remembered until the
// upstream reconnects. mcpx.protocol "2025-11-25" never starts it.

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	config "github.com/mcpx-dev/mcpx/internal/gatewayconfig"
)

// stdioLane is the probe state of a stdio upstream's stateless lane.
type stdioLane struct {
	probe  sync.Mutex  // one probe at a time
	probed atomic.Bool // the outcome is in u.lane
}

// reset forgets the outcome (the upstream reconnected).
func (l *stdioLane) reset() { l.probed.Store(false) }

// statelessLane is the connection for a stateless client's request to u,
// or nil for the session's.
func (u *Upstream) statelessLane(ctx context.Context) conn {
	u.mu.RLock()
	lane := u.lane
	u.mu.RUnlock()
	if lane != nil {
		select {
		case <-lane.done():
			u.Log.Info("the stateless lane ended; opening another on demand", "error", lane.cause())
			u.setLane(nil)
		default:
			return lane
		}
	}
	if u.Config.Kind() != config.TypeStdio || u.Config.Mcpx.Protocol == mcp.ProtocolVersion20251125 || u.stdLane.probed.Load() {
		return nil
	}
	u.stdLane.probe.Lock()
	defer u.stdLane.probe.Unlock()
	if u.stdLane.probed.Load() {
		u.mu.RLock()
		defer u.mu.RUnlock()
		return u.lane
	}
	c := u.probeStdioLane(ctx)
	u.mu.Lock()
	u.lane = c
	u.mu.Unlock()
	u.stdLane.probed.Store(true)
	if c != nil {
		u.laneOpened()
	}
	return c
}

// probeStdioLane starts a second process of u's command and asks it
// server/discover; nil when it does not speak 2026-07-28.
func (u *Upstream) probeStdioLane(ctx context.Context) conn {
	h := connHandlers{
		notification: u.notification,
		request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return u.host.Request(ctx, u, Owner{}, method, params)
		},
	}
	log := u.Log.Named("stateless")
	c, err := startStdio(u.Name, u.Config, u.limits, log, h)
	if err != nil {
		log.Warn("could not start the stateless lane", "error", err)
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), u.Config.RequestTimeout())
	defer cancel()
	params, _ := json.Marshal(map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: u.clientCapabilities(),
		mcp.MetaKeyClientInfo:         map[string]any{"name": "mcpx", "version": u.version},
	}})
	res, err := c.call(pctx, "server/discover", params)
	if err != nil || !slices.Contains(stringsOf(gjson.GetBytes(res, "supportedVersions")), mcp.ProtocolVersion20260728) {
		log.Debug("upstream does not speak 2026-07-28; stateless requests share its session", "error", err)
		_ = c.close()
		return nil
	}
	log.Info("upstream speaks 2026-07-28: stateless requests go to a second, stateless process")
	return c
}
