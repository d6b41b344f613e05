// Package subscriptions holds who hears of which resource's updates and
// the open subscriptions/listen streams. A subscriber is a 2025-11-25
// session (resources/subscribe) or a 2026-07-28 subscriptions/listen
// stream (listen.go); upstream, a session-era server gets
// resources/subscribe and a stateless-only one the URI in its
// subscriptions/listen filter (upstream.ListenStream). The Table owns
// the subscriptions, Listeners the streams; each has its own lock and
// knows of the rest of the gateway only the router parts it was built
// with.
package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Subscriber hears of the notifications it subscribed to, from the
// processes it hears.
type Subscriber interface {
	// Notify sends the subscriber a notification; it must not block for
	// long.
	Notify(method string, params json.RawMessage)
	// Hears reports whether the subscriber may hear what a process of
	// from sends: a process of one session or principal speaks to its
	// owner only.
	Hears(from upstream.Owner) bool
}

// Table is who subscribes to which resource URI.
type Table struct {
	ups  *router.Upstreams
	uris *router.URIs

	mu   sync.Mutex
	subs map[string]map[Subscriber]struct{} // resource URI → subscribers
}

// NewTable returns an empty table of ups' resources, whose URIs uris
// resolve.
func NewTable(ups *router.Upstreams, uris *router.URIs) *Table {
	return &Table{ups: ups, uris: uris, subs: map[string]map[Subscriber]struct{}{}}
}

// Subscribe records sub's subscription to uri and subscribes upstream
// when it is the first for uri.
func (t *Table) Subscribe(ctx context.Context, sub Subscriber, uri string) error {
	t.mu.Lock()
	set := t.subs[uri]
	if set == nil {
		set = map[Subscriber]struct{}{}
		t.subs[uri] = set
	}
	if _, dup := set[sub]; dup {
		t.mu.Unlock()
		return nil
	}
	first := len(set) == 0
	set[sub] = struct{}{}
	t.mu.Unlock()
	if _, ok := artifacts.ID(uri); ok || !first {
		return nil // artifacts never change
	}
	if err := t.subscribeUpstream(ctx, uri); err != nil {
		t.Unsubscribe(sub, uri)
		return err
	}
	return nil
}

// subscribeUpstream subscribes to uri on the first upstream that takes
// it.
func (t *Table) subscribeUpstream(ctx context.Context, uri string) error {
	_, orig, namespaced := t.uris.Resolve(uri)
	params, _ := json.Marshal(map[string]string{"uri": orig})
	var errs []error
	for _, u := range t.uris.Candidates(uri) {
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
			t.uris.Claim(u, uri)
		}
		return nil
	}
	if len(errs) == 0 {
		return jsonrpc.ErrUnknownResource
	}
	return errors.Join(errs...)
}

// Unsubscribe drops sub's subscription to uri, and the upstream's when
// it was the last.
func (t *Table) Unsubscribe(sub Subscriber, uri string) {
	t.mu.Lock()
	set := t.subs[uri]
	_, had := set[sub]
	delete(set, sub)
	last := had && len(set) == 0
	if len(set) == 0 {
		delete(t.subs, uri)
	}
	t.mu.Unlock()
	if _, ok := artifacts.ID(uri); ok || !last {
		return
	}
	u, orig, namespaced := t.uris.Resolve(uri)
	if !namespaced {
		u = t.uris.OwnerOf(uri)
	}
	run := t.ups.Context()
	if u == nil || run == nil {
		return
	}
	if u.StatelessOnly() {
		u.Listen().Remove(orig)
		return
	}
	params, _ := json.Marshal(map[string]string{"uri": orig})
	if _, err := u.Call(run, "resources/unsubscribe", params); err != nil {
		u.Log.Debug("resources/unsubscribe failed", "uri", uri, "error", err)
	}
}

// Count returns how many sessions and subscriptions/listen streams
// subscribe to uri.
func (t *Table) Count(uri string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.subs[uri])
}

// subscribedURIs are the URIs, in u's own form, that someone subscribes
// to on u.
func (t *Table) subscribedURIs(u *upstream.Upstream) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var uris []string
	for uri := range t.subs {
		if nu, orig, ok := t.uris.Resolve(uri); ok {
			if nu == u {
				uris = append(uris, orig)
			}
		} else if t.uris.OwnerOf(uri) == u {
			uris = append(uris, uri)
		}
	}
	return uris
}

// Renew subscribes again on a reconnected upstream (a stateless-only
// one: opens its subscriptions/listen stream).
func (t *Table) Renew(u *upstream.Upstream) {
	run := t.ups.Context()
	if u.StatelessOnly() {
		// the connection's own start must not wait for the stream
		go func() {
			if err := u.Listen().Reopen(run); err != nil {
				u.Log.Warn("opening subscriptions/listen", "error", err)
			}
		}()
		return
	}
	for _, uri := range t.subscribedURIs(u) {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if _, err := u.Call(run, "resources/subscribe", params); err != nil {
			u.Log.Warn("renewing a subscription after reconnect", "uri", uri, "error", err)
		}
	}
}

// Updated fans an upstream's notifications/resources/updated out to the
// subscribers who hear from: those of the bare URI when u owns it (see
// router.UpstreamURIPrefix), those of u's namespaced form always, under
// that form. It returns the subscribers told.
func (t *Table) Updated(u *upstream.Upstream, from upstream.Owner, method string, params json.RawMessage) []Subscriber {
	uri := gjson.GetBytes(params, "uri").String()
	alias := router.UpstreamURI(u.Name, uri)
	owner := t.uris.OwnerOf(uri)
	t.mu.Lock()
	var bare, named []Subscriber
	if owner == nil || owner == u {
		for s := range t.subs[uri] {
			if s.Hears(from) {
				bare = append(bare, s)
			}
		}
	}
	for s := range t.subs[alias] {
		if s.Hears(from) {
			named = append(named, s)
		}
	}
	t.mu.Unlock()
	for _, s := range bare {
		s.Notify(method, params)
	}
	if len(named) > 0 {
		p, _ := sjson.SetBytes(append([]byte(nil), params...), "uri", alias)
		for _, s := range named {
			s.Notify(method, p)
		}
	}
	u.Log.Debug("resource updated", "uri", uri, "subscribers", len(bare)+len(named))
	return append(bare, named...)
}
