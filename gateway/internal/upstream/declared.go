package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

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

// declaration returns what u's new connection c declares in initialize,
// waiting for the first client's capabilities when the gateway waits for
// them; it fails when c ends or ctx is done first.
func (u *Upstream) declaration(ctx context.Context, c conn) (json.RawMessage, error) {
	if u.first != nil && len(u.Config.Mcpx.ClientCapabilities) == 0 {
		select {
		case <-u.first:
		default:
			u.Log.Info("started; initialize waits for the first client, to declare its capabilities (set mcpx.client_capabilities to initialize at once)")
			select {
			case <-u.first:
			case <-c.done():
				return nil, fmt.Errorf("upstream[%s]: ended while waiting for the first client: %w", u.Name, connEnded(c))
			case <-ctx.Done():
				return nil, fmt.Errorf("upstream[%s]: %w", u.Name, ctx.Err())
			}
		}
	}
	caps := u.host.ClientCapabilities(u)
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

// clientCapabilities are what u's connection declared, for the requests
// that carry them again (a stateless upstream's _meta, server/discover).
func (u *Upstream) clientCapabilities() json.RawMessage {
	if d := u.declared.get(); d != nil {
		return d
	}
	return u.host.ClientCapabilities(u)
}

// ClientDeclaredRoots is told that a client declared roots: when u was
// initialized without roots, which it cannot learn of without a
// restart, that is logged once.
func (u *Upstream) ClientDeclaredRoots() {
	if len(u.Config.Mcpx.Roots) > 0 || u.declared.rootsLogged.Load() {
		return
	}
	d := u.declared.get()
	if d == nil || gjson.GetBytes(d, "roots").Exists() {
		return // not initialized yet, or told of roots
	}
	if u.declared.rootsLogged.CompareAndSwap(false, true) {
		u.Log.Info("a client declared roots, but the upstream was initialized without roots and cannot learn of them without a restart, which mcpx does not do; to declare roots from the start set mcpServers." + u.Name + ".mcpx.client_capabilities (e.g. {\"roots\":{\"listChanged\":true}})")
	}
}

// ClientRootsChanged sends notifications/roots/list_changed when u was
// told roots with listChanged and does not answer roots/list from its
// config.
func (u *Upstream) ClientRootsChanged() {
	if len(u.Config.Mcpx.Roots) > 0 || !gjson.GetBytes(u.declared.get(), "roots.listChanged").Bool() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), u.Config.RequestTimeout())
	defer cancel()
	if err := u.Notify(ctx, "notifications/roots/list_changed", nil); err != nil {
		u.Log.Debug("notifications/roots/list_changed not sent", "error", err)
	}
}
