package upstream

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// connect makes the upstream's shared connection: it starts the process
// or connects, runs the handshake (initialize, or server/discover for a
// server that speaks only 2026-07-28), loads the tool list, opens the
// stateless lane where the server speaks 2026-07-28, and tells the
// gateway. The supervisor keeps what it returns up.
func (u *Upstream) connect(ctx context.Context) (conn, error) {
	h := u.handlers(Owner{}, nil)
	var (
		c   conn
		err error
	)
	switch u.Config.Kind() {
	case config.TypeStdio:
		c, err = startStdio(u.Name, u.Config, u.limits, u.Log, h)
	default:
		c, err = startHTTP(ctx, u.Name, u.Config, u.limits, u.Log, h)
	}
	if err != nil {
		return nil, err
	}
	caps, err := u.hs.declare(ctx, c, u.sup.waitingForClient)
	if err != nil {
		_ = c.close()
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, u.Config.StartupTimeout())
	defer cancel()
	if u.lanes.startsStateless() {
		return u.connectStateless(ictx, c)
	}
	res, err := c.call(ictx, "initialize", u.hs.initializeParams(caps))
	if err != nil {
		if ictx.Err() == nil && u.Config.Mcpx.Protocol != mcp.ProtocolVersion20251125 {
			if sc, serr := u.connectStateless(ictx, c); serr == nil {
				return sc, nil
			}
		}
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: initialize: %w", u.Name, timeoutErr(ictx, err))
	}
	pv, err := u.hs.initialized(ictx, c, res)
	if err != nil {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: %w", u.Name, err)
	}
	u.decl.set(res, pv)
	u.sup.ready(c)
	toolsErr := u.LoadTools(ictx)
	if toolsErr != nil {
		u.Log.Warn("tools/list failed; its tools are not offered until a retry succeeds", "error", toolsErr)
	}
	u.lanes.set(u.lanes.probeHTTP(ictx))
	u.Log.Info("upstream ready", "protocol", pv, "tools", len(u.ToolDefs()))
	u.inst.primaryUp()
	u.host.Ready(u)
	if toolsErr != nil {
		go u.retryTools(c)
	}
	return c, nil
}

// connectStateless makes c (never initialized) the shared connection of
// a server that speaks only 2026-07-28 (stateless_only.go): its
// server/discover result stands in for initialize's.
func (u *Upstream) connectStateless(ctx context.Context, c conn) (conn, error) {
	c, res, err := u.lanes.adopt(ctx, c)
	if err != nil {
		return nil, err
	}
	u.decl.set(res, mcp.ProtocolVersion20260728)
	u.sup.ready(c)
	if err := u.LoadTools(ctx); err != nil {
		u.Log.Warn("tools/list failed; the server's tools are not offered", "error", err)
	}
	u.Log.Info("upstream ready; it speaks only 2026-07-28 and is served statelessly", "tools", len(u.ToolDefs()))
	u.host.Ready(u)
	return c, nil
}

// LoadTools fetches every page of tools/list.
func (u *Upstream) LoadTools(ctx context.Context) error { return u.decl.loadTools(ctx, u.Call) }

// retryTools lists the tools of connection c again (after 1, 2, 4, 8 and
// 16 s) until it works, c is no longer the upstream's, or the retries run
// out; then the gateway is told, as when the server starts (clients hear
// list_changed). Without it a server whose first tools/list failed (a
// slow start on a loaded machine) would offer no tools until it restarts
// or says list_changed.
func (u *Upstream) retryTools(c conn) {
	for wait := time.Second; wait <= 16*time.Second; wait *= 2 {
		select {
		case <-time.After(wait):
		case <-c.done():
			return
		}
		if u.sup.conn() != c {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), u.Config.StartupTimeout())
		err := u.LoadTools(ctx)
		cancel()
		if err == nil {
			u.Log.Info("tools/list worked on a retry", "tools", len(u.ToolDefs()))
			u.host.Ready(u)
			return
		}
		u.Log.Warn("tools/list failed again", "error", err)
	}
}
