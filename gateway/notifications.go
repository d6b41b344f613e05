package gateway

// Notifications an upstream sends on its own, one handler per method, and
// the fan-out to clients: every initialized session, and the
// subscriptions/listen streams that asked for the method (listen.go).
// What a process of one session or principal sends (mcpx.instances
// per_session, per_user) reaches that owner's alone: its log messages and
// updates are of that user's state (upstream/instances.go).

import (
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// upstreamNotification routes what a process of u (of from) announces,
// one handler per method. The tag of the upstream's subscriptions/listen
// stream is dropped: a client's own stream tags what reaches it.
func (g *Gateway) upstreamNotification(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) {
	if method != subscriptions.NotificationAcked {
		params = subscriptions.Untag(params)
	}
	switch method {
	case "notifications/progress":
		g.upstreamProgress(u, method, params)
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
	g.cache.Invalidate(uri)
	g.cache.Invalidate(router.UpstreamURI(u.Name, uri))
	g.publishUpdate(u.Name, uri, g.subs.Updated(u, from, method, params))
}

// upstreamProgress relays progress to the client whose call it is about,
// under the client's own token.
func (g *Gateway) upstreamProgress(u *upstream.Upstream, method string, params json.RawMessage) {
	tok := gjson.GetBytes(params, "progressToken")
	g.progMu.Lock()
	r, ok := g.progress[tok.Raw]
	g.progMu.Unlock()
	if !ok {
		u.Log.Debug("progress for a token no call holds", "token", tok.Raw)
		return
	}
	p, err := sjson.SetRawBytes(append([]byte(nil), params...), "progressToken", r.token)
	if err != nil {
		return
	}
	msg := encodeRequest(nil, method, p)
	if r.related != nil {
		r.related(msg)
	} else {
		r.s.send(msg)
	}
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
		ctx, cancel := context.WithTimeout(g.ups.Context(), u.Config.RequestTimeout())
		defer cancel()
		if err := u.LoadTools(ctx); err != nil {
			u.Log.Warn("reloading tools after list_changed", "error", err)
		}
		g.tools.Rebuild()
		g.broadcast(from, method, nil)
	}()
}

// broadcast sends a notification to every initialized session that
// hears from, and to the subscriptions/listen streams of those that
// asked for it; the zero Owner is everyone.
func (g *Gateway) broadcast(from upstream.Owner, method string, params json.RawMessage) {
	msg := encodeRequest(nil, method, params)
	// send outside the lock: a stdio client that does not read holds its
	// sender up (back-pressure), and must not hold up new sessions too
	g.sessMu.RLock()
	to := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		if s.initialized.Load() && s.Hears(from) {
			to = append(to, s)
		}
	}
	g.sessMu.RUnlock()
	for _, s := range to {
		s.send(msg)
	}
	g.listen.Notify(from, method, params)
}

// Hears reports whether s may hear what a process of from sends on its
// own: a process of one session or principal speaks to its owner only.
func (s *session) Hears(from upstream.Owner) bool {
	switch {
	case from.Session != nil:
		return from.Session == any(s)
	case from.Principal != "":
		return s.principalKey() == from.Principal
	}
	return true
}
