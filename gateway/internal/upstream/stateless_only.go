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

	"github.com/mark3labs/mcp-go/mcp"
)

// errNotStateless says an upstream does not speak 2026-07-28.
var errNotStateless = errors.New("the server does not list " + mcp.ProtocolVersion20260728 + " in server/discover")

// statelessOnly reports whether the upstream speaks only 2026-07-28.
func (l *lanes) statelessOnly() bool { return l.only.Load() }

// startsStateless reports whether the upstream's next connection begins
// with server/discover.
func (l *lanes) startsStateless() bool {
	return l.cfg.Mcpx.Protocol == mcp.ProtocolVersion20260728 || l.only.Load()
}

// adopt makes c (never initialized) the upstream's stateless connection,
// or, for a streamable-HTTP upstream, closes it and opens a sessionless
// one; that connection is the lane too. It returns the connection and
// the server/discover result.
func (l *lanes) adopt(ctx context.Context, c conn) (conn, json.RawMessage, error) {
	if _, ok := c.(*httpConn); ok {
		_ = c.close()
		if c = l.probeHTTP(ctx); c == nil {
			return nil, nil, fmt.Errorf("upstream[%s]: %w", l.name, errNotStateless)
		}
	}
	res, err := l.hs.discover(ctx, c)
	if err != nil {
		_ = c.close()
		return nil, nil, fmt.Errorf("upstream[%s]: server/discover: %w", l.name, err)
	}
	l.only.Store(true)
	l.mu.Lock()
	l.lane = c
	l.mu.Unlock()
	l.probed.Store(true)
	return c, res, nil
}

// callStatelessOnly sends a request to a stateless-only upstream: with the
// stateless client's _meta, or the gateway's, bridging an input_required
// result for a session client.
func (l *lanes) callStatelessOnly(ctx context.Context, c conn, callerMeta json.RawMessage, stateless bool, method string, params json.RawMessage) (json.RawMessage, error) {
	meta := l.hs.meta()
	if stateless {
		meta = callerMeta
	}
	params = withStatelessMeta(params, meta)
	res, err := l.call(ctx, c, method, params)
	if err == nil && inputRequired(res) && !stateless {
		res, err = l.fulfilForSession(ctx, method, params, res, func(p json.RawMessage) (json.RawMessage, error) {
			return l.call(ctx, c, method, p)
		})
	}
	return res, err
}
