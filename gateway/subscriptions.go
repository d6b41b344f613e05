package gateway

// Resource subscriptions: who hears of notifications/resources/updated
// for which URI, and the upstream subscriptions behind them. A
// subscriber is a 2025-11-25 session (resources/subscribe) or a
// 2026-07-28 subscriptions/listen stream (listen.go); upstream, a
// session-era server gets resources/subscribe and a stateless-only one
// the URI in its subscriptions/listen filter (upstream_listen.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// subscriber hears of the notifications it subscribed to, from the
// processes it hears (session.hears).
type subscriber interface {
	notify(method string, params json.RawMessage)
	hears(from upstream.Owner) bool
}

// notify sends a notification on the session's own channel.
func (s *session) notify(method string, params json.RawMessage) {
	s.send(encodeRequest(nil, method, params))
}

// subscribeSession serves resources/subscribe: the session's subscription
// lasts until resources/unsubscribe or the session's end.
func (s *session) subscribeSession(ctx context.Context, uri string) error {
	if err := s.g.subscribe(ctx, s, uri); err != nil {
		return fmt.Errorf("resources/subscribe %s: %w", uri, err)
	}
	s.mu.Lock()
	s.subs[uri] = struct{}{}
	s.mu.Unlock()
	return nil
}

// unsubscribeSession serves resources/unsubscribe.
func (s *session) unsubscribeSession(uri string) {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
	s.g.unsubscribe(s, uri)
}

// subscribe records sub's subscription to uri and subscribes upstream
// when it is the first for uri.
func (g *Gateway) subscribe(ctx context.Context, sub subscriber, uri string) error {
	g.subsMu.Lock()
	set := g.subs[uri]
	if set == nil {
		set = map[subscriber]struct{}{}
		g.subs[uri] = set
	}
	if _, dup := set[sub]; dup {
		g.subsMu.Unlock()
		return nil
	}
	first := len(set) == 0
	set[sub] = struct{}{}
	g.subsMu.Unlock()
	if _, ok := artifacts.ID(uri); ok || !first {
		return nil // artifacts never change
	}
	if err := g.subscribeUpstream(ctx, uri); err != nil {
		g.unsubscribe(sub, uri)
		return err
	}
	return nil
}

// subscribeUpstream subscribes to uri on the first upstream that takes
// it.
func (g *Gateway) subscribeUpstream(ctx context.Context, uri string) error {
	_, orig, namespaced := g.uris.Resolve(uri)
	params, _ := json.Marshal(map[string]string{"uri": orig})
	var errs []error
	for _, u := range g.uris.Candidates(uri) {
		var err error
		if u.StatelessOnly() {
			err = u.Listen().Add(ctx, orig)
		} else {
			_, err = u.Call(ctx, "resources/subscribe", params)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !namespaced {
			g.uris.Claim(u, uri)
		}
		return nil
	}
	if len(errs) == 0 {
		return jsonrpc.ErrUnknownResource
	}
	return errors.Join(errs...)
}

// unsubscribe drops sub's subscription to uri, and the upstream's when
// it was the last.
func (g *Gateway) unsubscribe(sub subscriber, uri string) {
	g.subsMu.Lock()
	set := g.subs[uri]
	_, had := set[sub]
	delete(set, sub)
	last := had && len(set) == 0
	if len(set) == 0 {
		delete(g.subs, uri)
	}
	g.subsMu.Unlock()
	if _, ok := artifacts.ID(uri); ok || !last {
		return
	}
	u, orig, namespaced := g.uris.Resolve(uri)
	if !namespaced {
		u = g.uris.OwnerOf(uri)
	}
	if u == nil || g.ups.Context() == nil {
		return
	}
	if u.StatelessOnly() {
		u.Listen().Remove(orig)
		return
	}
	params, _ := json.Marshal(map[string]string{"uri": orig})
	if _, err := u.Call(g.ups.Context(), "resources/unsubscribe", params); err != nil {
		u.Log.Debug("resources/unsubscribe failed", "uri", uri, "error", err)
	}
}

// subscribers returns how many sessions and subscriptions/listen streams
// subscribe to uri.
func (g *Gateway) subscribers(uri string) int {
	g.subsMu.Lock()
	defer g.subsMu.Unlock()
	return len(g.subs[uri])
}

// subscribedURIs are the URIs, in u's own form, that someone subscribes
// to on u.
func (g *Gateway) subscribedURIs(u *upstream.Upstream) []string {
	g.subsMu.Lock()
	defer g.subsMu.Unlock()
	var uris []string
	for uri := range g.subs {
		if nu, orig, ok := g.uris.Resolve(uri); ok {
			if nu == u {
				uris = append(uris, orig)
			}
		} else if g.uris.OwnerOf(uri) == u {
			uris = append(uris, uri)
		}
	}
	return uris
}

// renewSubscriptions subscribes again on a reconnected upstream (a
// stateless-only one: opens its subscriptions/listen stream).
func (g *Gateway) renewSubscriptions(u *upstream.Upstream) {
	if u.StatelessOnly() {
		// the connection's own start must not wait for the stream
		go func() {
			if err := u.Listen().Reopen(g.ups.Context()); err != nil {
				u.Log.Warn("opening subscriptions/listen", "error", err)
			}
		}()
		return
	}
	for _, uri := range g.subscribedURIs(u) {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if _, err := u.Call(g.ups.Context(), "resources/subscribe", params); err != nil {
			u.Log.Warn("renewing a subscription after reconnect", "uri", uri, "error", err)
		}
	}
}

// resourceUpdated fans an upstream's notifications/resources/updated out
// to the subscribers who hear from: those of the bare URI when u owns it
// (see UpstreamURIPrefix), those of u's namespaced form always, under
// that form. Cached reads of either form are dropped.
func (g *Gateway) resourceUpdated(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) {
	uri := gjson.GetBytes(params, "uri").String()
	alias := router.UpstreamURI(u.Name, uri)
	g.invalidate(uri)
	g.invalidate(alias)
	owner := g.uris.OwnerOf(uri)
	g.subsMu.Lock()
	var bare, named []subscriber
	if owner == nil || owner == u {
		for s := range g.subs[uri] {
			if s.hears(from) {
				bare = append(bare, s)
			}
		}
	}
	for s := range g.subs[alias] {
		if s.hears(from) {
			named = append(named, s)
		}
	}
	g.subsMu.Unlock()
	for _, s := range bare {
		s.notify(method, params)
	}
	if len(named) > 0 {
		p, _ := sjson.SetBytes(append([]byte(nil), params...), "uri", alias)
		for _, s := range named {
			s.notify(method, p)
		}
	}
	g.publishUpdate(u.Name, uri, bare, named)
	u.Log.Debug("resource updated", "uri", uri, "subscribers", len(bare)+len(named))
}
