package gateway

// What the upstreams say to the gateway, routed to the rooms: a server's
// requests to its clients (the sessions' Registry relays them), its
// notifications, one handler per method, and its readiness. What a
// process of one session or principal sends (mcpx.instances
// per_session, per_user) reaches that owner's alone: its log messages and
// updates are of that user's state (upstream.Instances).

import (
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
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
	return h.g.rooms.Sessions.Relay(ctx, u, from, method, params)
}

func (h upstreamHost) Notification(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) {
	h.g.upstreamNotification(u, from, method, params)
}

func (h upstreamHost) Ready(u *upstream.Upstream) { h.g.upstreamReady(u) }

func (h upstreamHost) ClientCapabilities(u *upstream.Upstream) json.RawMessage {
	return h.g.rooms.Clients.Declare(u)
}

var _ upstream.Host = upstreamHost{}

// upstreamReady rebuilds the tool routes, tells sessions the lists
// changed, and renews the upstream's subscriptions after a restart. A
// client that listed before the upstream was up (it started late, or
// restarted) learns of its tools, resources and prompts this way.
func (g *Gateway) upstreamReady(u *upstream.Upstream) {
	g.rooms.Tools.Rebuild()
	g.broadcast(upstream.Owner{}, subscriptions.NotificationToolsListChanged, nil)
	if u.Capability("resources") {
		g.broadcast(upstream.Owner{}, subscriptions.NotificationResourcesListChange, nil)
	}
	if u.Capability("prompts") {
		g.broadcast(upstream.Owner{}, subscriptions.NotificationPromptsListChanged, nil)
	}
	g.rooms.Subs.Renew(u)
}

// upstreamNotification routes what a process of u (of from) announces,
// one handler per method. The tag of the upstream's subscriptions/listen
// stream is dropped: a client's own stream tags what reaches it.
func (g *Gateway) upstreamNotification(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) {
	if method != subscriptions.NotificationAcked {
		params = subscriptions.Untag(params)
	}
	switch method {
	case "notifications/progress":
		g.rooms.Progress.Relay(u, method, params)
	case "notifications/message":
		g.upstreamLog(u, from, method, params)
	case subscriptions.NotificationToolsListChanged:
		g.upstreamToolsChanged(u, from, method)
	case "notifications/resources/updated":
		g.resourceUpdated(u, from, method, params)
	case subscriptions.NotificationResourcesListChange, subscriptions.NotificationPromptsListChanged:
		g.broadcast(from, method, params)
	case subscriptions.NotificationAcked:
		u.Listen().Acknowledged(params)
	case "notifications/cancelled":
		// the upstream gave up on a request of ours: nothing is pending
	default:
		u.Log.Debug("notification not forwarded", "method", method)
	}
}

// resourceUpdated drops the cached reads of an updated resource (its
// bare and its namespaced form), tells its subscribers, and publishes the
// update (Options.OnResourceUpdated).
func (g *Gateway) resourceUpdated(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) {
	uri := gjson.GetBytes(params, "uri").String()
	g.rooms.Cache.Invalidate(uri)
	g.rooms.Cache.Invalidate(router.UpstreamURI(u.Name, uri))
	g.publishUpdate(u.Name, uri, g.rooms.Subs.Updated(u, from, method, params))
}

// upstreamLog broadcasts a log message to those who hear from, naming
// the server as its logger when it names none.
func (g *Gateway) upstreamLog(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) {
	if !gjson.GetBytes(params, "logger").Exists() {
		params, _ = sjson.SetBytes(append([]byte(nil), params...), "logger", u.Name)
	}
	g.broadcast(from, method, params)
}

// upstreamToolsChanged reloads the upstream's tools, then tells those who
// hear from: a client that lists at once sees the new list.
func (g *Gateway) upstreamToolsChanged(u *upstream.Upstream, from upstream.Owner, method string) {
	go func() {
		ctx, cancel := context.WithTimeout(g.rooms.Ups.Context(), u.Config.RequestTimeout())
		defer cancel()
		if err := u.LoadTools(ctx); err != nil {
			u.Log.Warn("reloading tools after list_changed", "error", err)
		}
		g.rooms.Tools.Rebuild()
		g.broadcast(from, method, nil)
	}()
}

// broadcast sends a notification to every initialized session that
// hears from, and to the subscriptions/listen streams that asked for it
// and hear from; the zero Owner is everyone.
func (g *Gateway) broadcast(from upstream.Owner, method string, params json.RawMessage) {
	g.rooms.Sessions.Broadcast(from, method, params)
	g.rooms.Listen.Notify(from, method, params)
}
