package gateway

// The resource cache: resources/read results kept per session and URI
// until the upstream says the resource changed.

import (
	"context"
	"encoding/json"
)

// cacheKey and cacheEntry are the resource cache (docs/design.md,
// "Resources"): reads are
// kept per session and URI until the upstream says the resource changed.
type cacheKey struct {
	session, uri, kind string
}

type cacheEntry struct {
	raw json.RawMessage
	ids []string // artifacts the entry refers to; a deleted one voids it
}

func (g *Gateway) cached(ctx context.Context, k cacheKey) (json.RawMessage, bool) {
	g.cacheMu.Lock()
	e, ok := g.cache[k]
	g.cacheMu.Unlock()
	if !ok {
		return nil, false
	}
	for _, id := range e.ids {
		if ok, err := g.st.Exists(ctx, id); err != nil || !ok {
			g.cacheMu.Lock()
			delete(g.cache, k)
			g.cacheMu.Unlock()
			return nil, false
		}
	}
	return e.raw, true
}

func (g *Gateway) remember(k cacheKey, raw json.RawMessage, ids []string) {
	if k.session == "" {
		return // a stateless request's: no session end would drop it (era.go)
	}
	g.cacheMu.Lock()
	g.cache[k] = cacheEntry{raw: raw, ids: ids}
	g.cacheMu.Unlock()
}

// invalidate drops every cached read of uri.
func (g *Gateway) invalidate(uri string) {
	g.cacheMu.Lock()
	defer g.cacheMu.Unlock()
	for k := range g.cache {
		if k.uri == uri {
			delete(g.cache, k)
		}
	}
}

func (g *Gateway) dropCache(session string) {
	g.cacheMu.Lock()
	defer g.cacheMu.Unlock()
	for k := range g.cache {
		if k.session == session {
			delete(g.cache, k)
		}
	}
}
