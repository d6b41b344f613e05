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
// input_required, the gateway's bridge.go); either outcome is remembered
// until the upstream reconnects. mcpx.protocol "2025-11-25" never starts it.

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// forRequest is the connection for a stateless client's request, or nil
// for the session's.
func (l *lanes) forRequest(ctx context.Context) conn {
	if lane := l.current(); lane != nil {
		select {
		case <-lane.done():
			l.log.Info("the stateless lane ended; opening another on demand", "error", lane.cause())
			l.set(nil)
		default:
			return lane
		}
	}
	if l.cfg.Kind() != config.TypeStdio || l.cfg.Mcpx.Protocol == mcp.ProtocolVersion20251125 || l.probed.Load() {
		return nil
	}
	l.probe.Lock()
	defer l.probe.Unlock()
	if l.probed.Load() {
		return l.current()
	}
	c := l.probeStdio(ctx)
	l.mu.Lock()
	l.lane = c
	l.mu.Unlock()
	l.probed.Store(true)
	if c != nil {
		l.opened()
	}
	return c
}

// forRequestOpen reports whether forRequest would give a lane now, with
// no probe to run.
func (l *lanes) forRequestOpen() bool {
	lane := l.current()
	if lane == nil {
		return false
	}
	select {
	case <-lane.done():
		return false
	default:
		return true
	}
}

// probeStdio starts a second process of the upstream's command and asks
// it server/discover; nil when it does not speak 2026-07-28.
func (l *lanes) probeStdio(ctx context.Context) conn {
	log := l.log.Named("stateless")
	c, err := startStdio(l.name, l.cfg, l.limits, log, l.h)
	if err != nil {
		log.Warn("could not start the stateless lane", "error", err)
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.RequestTimeout())
	defer cancel()
	if _, err := l.hs.discover(pctx, c); err != nil {
		log.Debug("upstream does not speak 2026-07-28; stateless requests share its session", "error", err)
		_ = c.close()
		return nil
	}
	log.Info("upstream speaks 2026-07-28: stateless requests go to a second, stateless process")
	return c
}
