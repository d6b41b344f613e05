package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Status describes one upstream for operators: its name, transport,
// state (starting, ready, restarting, failed, closed), protocol
// revision, tool count, restarts and last error.
type Status = upstream.Status

// upstreamHost is what the upstreams ask of the gateway (upstream.Host):
// their server-to-client requests and notifications, their readiness,
// and what they declare of the clients' capabilities.
type upstreamHost struct{ g *Gateway }

func (h upstreamHost) Request(ctx context.Context, u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) (json.RawMessage, error) {
	return h.g.upstreamRequest(ctx, u, from, method, params)
}

func (h upstreamHost) Notification(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) {
	h.g.upstreamNotification(u, from, method, params)
}

func (h upstreamHost) Ready(u *upstream.Upstream) { h.g.upstreamReady(u) }

func (h upstreamHost) ClientCapabilities(u *upstream.Upstream) json.RawMessage {
	return h.g.declare(u)
}

var _ upstream.Host = upstreamHost{}
