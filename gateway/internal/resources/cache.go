package resources

// The resource cache: resources/read results kept per session and URI
// until the upstream says the resource changed (docs/design.md,
// "Resources").

import (
	"context"
	"encoding/json"
	"maps"
	"sync"

	"github.com/mcpx-dev/mcpx/store"
)

// Cache keeps resources/read results per session and URI.
type Cache struct {
	st store.Store // an entry whose artifact is gone is void

	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
}

// NewCache returns an empty cache whose entries name artifacts of st.
func NewCache(st store.Store) *Cache {
	return &Cache{st: st, entries: map[cacheKey]cacheEntry{}}
}

type cacheKey struct {
	session, uri, kind string
}

type cacheEntry struct {
	raw json.RawMessage
	ids []string // artifacts the entry refers to; a deleted one voids it
}

// get returns the cached read of k, unless an artifact it names is gone.
func (c *Cache) get(ctx context.Context, k cacheKey) (json.RawMessage, bool) {
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	for _, id := range e.ids {
		if ok, err := c.st.Exists(ctx, id); err != nil || !ok {
			c.mu.Lock()
			delete(c.entries, k)
			c.mu.Unlock()
			return nil, false
		}
	}
	return e.raw, true
}

// put keeps raw, which names the artifacts ids, as the read of k.
func (c *Cache) put(k cacheKey, raw json.RawMessage, ids []string) {
	if k.session == "" {
		return // a stateless request's: no session end would drop it
	}
	c.mu.Lock()
	c.entries[k] = cacheEntry{raw: raw, ids: ids}
	c.mu.Unlock()
}

// Invalidate drops every cached read of uri.
func (c *Cache) Invalidate(uri string) { c.drop(func(k cacheKey) bool { return k.uri == uri }) }

// DropSession drops the reads of a session that ended.
func (c *Cache) DropSession(session string) {
	c.drop(func(k cacheKey) bool { return k.session == session })
}

// drop deletes the entries whose key matches.
func (c *Cache) drop(match func(cacheKey) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.entries, func(k cacheKey, _ cacheEntry) bool { return match(k) })
}
