package gateway

// What the gateway declares to an upstream as its client's capabilities.
// A server may decide what it offers by them (server-everything lists
// trigger-sampling-request only to a client with sampling), so each
// upstream is told what the clients in front of mcpx have, not all that
// mcpx could relay. initialize is once per connection and a connection is
// shared by every client, so the declaration is made once:
//
//   - mcpServers.NAME.mcpx.client_capabilities, when set, is declared
//     verbatim, at gateway start;
//   - with Options.WaitForClientCapabilities (mcpx serve and wrap), the
//     process starts at Start (it warms up) but its initialize waits for
//     the first client's capabilities (its initialize, or a stateless
//     request's _meta) and declares what of them mcpx relays: sampling
//     and elicitation as the client declared them (sub-fields kept),
//     roots (with listChanged) when it has roots;
//   - otherwise (a gateway used with no client in view) sampling and
//     elicitation, and roots when a connected client declared roots.
//
// mcpx.roots always declares roots (answered from the config). An
// upstream is never restarted to change its declaration: it may hold
// state a client sees (a browser page). When it was told roots with
// listChanged, a change of the connected clients' roots (a client with
// roots arrives or leaves, or says its roots changed) reaches it as
// notifications/roots/list_changed. A later client with roots it was not
// told of is logged once. A later client with fewer capabilities than
// declared is refused the requests it cannot answer (upstreamRequest).

import (
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"

	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
)

// firstClient holds the first client's capabilities, which upstreams'
// initialize waits for when wait is set.
type firstClient struct {
	wait  bool
	once  sync.Once
	ready chan struct{} // closed once caps is set
	caps  json.RawMessage
}

func (f *firstClient) init(wait bool) {
	f.wait = wait
	f.ready = make(chan struct{})
}

// declaredCaps is what an upstream's connection was told in initialize.
type declaredCaps struct {
	mu   sync.Mutex
	caps json.RawMessage // nil before the first connection's initialize
	// rootsLogged: a client with roots this upstream cannot learn of was
	// logged
	rootsLogged atomic.Bool
}

func (d *declaredCaps) get() json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.caps
}

func (d *declaredCaps) set(caps json.RawMessage) {
	d.mu.Lock()
	d.caps = caps
	d.mu.Unlock()
}

// clientArrived records a client's capabilities: the first client's open
// the upstreams' initialize; a client with roots that an upstream was
// not told of is logged once per upstream. It is called for every
// session's initialize and every stateless request, and is cheap when
// there is nothing to do.
func (g *Gateway) clientArrived(caps json.RawMessage) {
	g.first.once.Do(func() {
		g.first.caps = append(json.RawMessage(nil), caps...)
		close(g.first.ready)
	})
	if !gjson.GetBytes(caps, "roots").Exists() {
		return
	}
	for _, name := range g.order {
		u := g.ups[name]
		if len(u.Config.Mcpx.Roots) > 0 || u.declared.rootsLogged.Load() {
			continue
		}
		d := u.declared.get()
		if d == nil || gjson.GetBytes(d, "roots").Exists() {
			continue // not initialized yet, or told of roots
		}
		if u.declared.rootsLogged.CompareAndSwap(false, true) {
			u.Log.Info("a client declared roots, but the upstream was initialized without roots and cannot learn of them without a restart, which mcpx does not do; to declare roots from the start set mcpServers." + u.Name + ".mcpx.client_capabilities (e.g. {\"roots\":{\"listChanged\":true}})")
		}
	}
}

// declaration returns what u's new connection c declares in initialize,
// waiting for the first client's capabilities when the gateway waits for
// them; it fails when c ends or ctx is done first.
func (u *Upstream) declaration(ctx context.Context, c conn) (json.RawMessage, error) {
	g := u.g
	if g.first.wait && len(u.Config.Mcpx.ClientCapabilities) == 0 {
		select {
		case <-g.first.ready:
		default:
			u.Log.Info("started; initialize waits for the first client, to declare its capabilities (set mcpx.client_capabilities to initialize at once)")
			select {
			case <-g.first.ready:
			case <-c.done():
				return nil, fmt.Errorf("upstream[%s]: ended while waiting for the first client: %w", u.Name, connEnded(c))
			case <-ctx.Done():
				return nil, fmt.Errorf("upstream[%s]: %w", u.Name, ctx.Err())
			}
		}
	}
	caps := g.declare(u)
	u.declared.set(caps)
	return caps, nil
}

// connEnded is why c ended.
func connEnded(c conn) error {
	if err := c.cause(); err != nil {
		return err
	}
	return jsonrpc.ErrUpstreamExited
}

// relayedCapabilities are the client capabilities whose requests the
// gateway relays to its clients as they are, so a client's declaration
// of them (with its sub-fields, e.g. elicitation.url) holds upstream.
var relayedCapabilities = []string{"sampling", "elicitation"}

// declare computes what u is told of its client's capabilities (see the
// top of this file).
func (g *Gateway) declare(u *Upstream) json.RawMessage {
	if cc := u.Config.Mcpx.ClientCapabilities; len(cc) > 0 {
		return cc
	}
	caps := map[string]json.RawMessage{}
	if g.first.wait {
		for _, name := range relayedCapabilities {
			if v := gjson.GetBytes(g.first.caps, name); v.IsObject() {
				caps[name] = json.RawMessage(v.Raw)
			}
		}
		if gjson.GetBytes(g.first.caps, "roots").Exists() {
			caps["roots"] = json.RawMessage(`{"listChanged":true}`)
		}
	} else {
		caps["sampling"] = json.RawMessage(`{}`)
		caps["elicitation"] = json.RawMessage(`{}`)
		if g.anyClientHasRoots() {
			caps["roots"] = json.RawMessage(`{"listChanged":true}`)
		}
	}
	if len(u.Config.Mcpx.Roots) > 0 {
		// answered from the config, which does not change
		caps["roots"] = json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(caps)
	return b
}

// clientCapabilities are what u's connection declared, for the requests
// that carry them again (a stateless upstream's _meta, server/discover).
func (g *Gateway) clientCapabilities(u *Upstream) json.RawMessage {
	if d := u.declared.get(); d != nil {
		return d
	}
	return g.declare(u)
}

// anyClientHasRoots reports whether an open session's client declared
// roots.
func (g *Gateway) anyClientHasRoots() bool {
	g.sessMu.RLock()
	defer g.sessMu.RUnlock()
	for _, s := range g.sessions {
		if s.clientHas("roots") {
			return true
		}
	}
	return false
}

// clientRootsChanged tells every upstream that was told roots with
// listChanged that the clients' roots changed: a client with roots
// arrived or left, or said its roots changed. The upstream then asks
// roots/list, which is answered by the connected clients (callerFor).
func (g *Gateway) clientRootsChanged() {
	for _, name := range g.order {
		u := g.ups[name]
		if len(u.Config.Mcpx.Roots) > 0 || !gjson.GetBytes(u.declared.get(), "roots.listChanged").Bool() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), u.Config.RequestTimeout())
		if err := u.Notify(ctx, "notifications/roots/list_changed", nil); err != nil {
			u.Log.Debug("notifications/roots/list_changed not sent", "error", err)
		}
		cancel()
	}
}
