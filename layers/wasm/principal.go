package wasm

import (
	"sync"

	"github.com/mcpx-dev/mcpx/engine/layer"
)

// principal is whom a call runs for. A guest's memory outlives a call (its
// globals, its heap, the request buffer the host reuses), so a guest that
// keeps the last request could hand one server's arguments (an api_key) or
// one tenant's data to the next caller. Pooled instances are therefore
// never shared between principals: one .wasm configured for two servers,
// or serving two tenants, gets fresh instances for each. The session and
// trace are not part of it: they are one user's, who may see their own
// data.
type principal struct {
	server, tenant, user string
}

func principalOf(d *layer.Doc) principal {
	if d == nil {
		return principal{}
	}
	return principal{server: d.Call.Server, tenant: d.Call.Scope.TenantID, user: d.Call.Scope.UserID}
}

// instancePool holds a plugin's idle instances, at most max, least
// recently used first. An instance is taken only by the principal it
// served, or by anyone while it has served nobody.
type instancePool struct {
	mu   sync.Mutex
	max  int
	idle []*instance
}

// take returns an idle instance of who (the most recently used), else one
// that has served nobody, else nil: the caller instantiates a fresh one.
func (p *instancePool) take(who principal) *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	pick := -1
	for i := len(p.idle) - 1; i >= 0; i-- {
		if in := p.idle[i]; in.owned && in.owner == who {
			pick = i
			break
		}
		if !p.idle[i].owned && pick < 0 {
			pick = i
		}
	}
	if pick < 0 {
		return nil
	}
	in := p.idle[pick]
	p.idle = append(p.idle[:pick], p.idle[pick+1:]...)
	return in
}

// put returns an instance to the pool; when the pool is full it hands back
// the least recently used instance, which the caller closes.
func (p *instancePool) put(in *instance) (evicted *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.max {
		evicted = p.idle[0]
		p.idle = append(p.idle[:0], p.idle[1:]...)
	}
	p.idle = append(p.idle, in)
	return evicted
}

// drain empties the pool and returns what it held.
func (p *instancePool) drain() []*instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.idle
	p.idle = nil
	return out
}
