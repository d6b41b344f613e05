package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// handshake is how mcpx introduces itself to a server as its client: its
// clientInfo, the client capabilities it declares (the first client's,
// unless the config declares its own), and the two handshakes that carry
// them: initialize (2025-11-25) and server/discover (2026-07-28). What
// the shared connection declared is kept: the requests that carry the
// capabilities again (a stateless upstream's _meta, server/discover, an
// extra process's initialize) declare the same.
type handshake struct {
	name    string
	cfg     config.ServerConfig
	log     hclog.Logger
	version string                 // mcpx's clientInfo.version
	first   <-chan struct{}        // Options.FirstClient
	ask     func() json.RawMessage // Host.ClientCapabilities of the upstream

	mu   sync.Mutex
	caps json.RawMessage // nil before the first connection's initialize
	// rootsLogged: a client with roots this upstream cannot learn of was
	// logged
	rootsLogged atomic.Bool
}

func newHandshake(name string, cfg config.ServerConfig, version string, first <-chan struct{}, log hclog.Logger, ask func() json.RawMessage) *handshake {
	return &handshake{name: name, cfg: cfg, log: log, version: version, first: first, ask: ask}
}

// declare returns what a new shared connection c declares, waiting for
// the first client's capabilities when the gateway waits for them (and
// calling waiting first, whose result it calls once the client came);
// it fails when c ends or ctx is done first.
func (h *handshake) declare(ctx context.Context, c conn, waiting func() (arrived func())) (json.RawMessage, error) {
	if h.first != nil && len(h.cfg.Mcpx.ClientCapabilities) == 0 {
		select {
		case <-h.first:
		default:
			h.log.Info("started; initialize waits for the first client, to declare its capabilities (set mcpx.client_capabilities to initialize at once)")
			defer waiting()()
			select {
			case <-h.first:
			case <-c.done():
				return nil, fmt.Errorf("upstream[%s]: ended while waiting for the first client: %w", h.name, connEnded(c))
			case <-ctx.Done():
				return nil, fmt.Errorf("upstream[%s]: %w", h.name, ctx.Err())
			}
		}
	}
	caps := h.ask()
	h.mu.Lock()
	h.caps = caps
	h.mu.Unlock()
	return caps, nil
}

// declared is what the shared connection declared, nil before it did.
func (h *handshake) declared() json.RawMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.caps
}

// capabilities are what the shared connection declared, for the
// requests that carry them again; the gateway's answer now before it
// did.
func (h *handshake) capabilities() json.RawMessage {
	if d := h.declared(); d != nil {
		return d
	}
	return h.ask()
}

// clientInfo is mcpx's, as every handshake names it.
func (h *handshake) clientInfo() map[string]any {
	return map[string]any{"name": "mcpx", "version": h.version}
}

// initializeParams are the params of initialize declaring caps.
func (h *handshake) initializeParams(caps json.RawMessage) json.RawMessage {
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    caps,
		"clientInfo":      h.clientInfo(),
	})
	return params
}

// initialized completes the handshake initialize answered with res: the
// revision it agreed must be one mcp-go knows, and the server is told
// notifications/initialized. It returns that revision.
func (h *handshake) initialized(ctx context.Context, c conn, res json.RawMessage) (string, error) {
	pv := gjson.GetBytes(res, "protocolVersion").String()
	if !mcp.IsValidProtocolVersion(pv) {
		return "", fmt.Errorf("initialize: unsupported protocol version %q", pv)
	}
	if hc, ok := c.(*httpConn); ok {
		hc.setProtocolVersion(pv)
	}
	if err := c.notify(ctx, "notifications/initialized", nil); err != nil {
		return "", fmt.Errorf("initialized: %w", err)
	}
	return pv, nil
}

// meta is the stateless _meta of the requests the gateway sends for
// itself and for session clients.
func (h *handshake) meta() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: h.capabilities(),
		mcp.MetaKeyClientInfo:         h.clientInfo(),
	})
	return b
}

// discover asks c server/discover with the gateway's _meta;
// errNotStateless when the answer lists no 2026-07-28.
func (h *handshake) discover(ctx context.Context, c conn) (json.RawMessage, error) {
	params, _ := json.Marshal(map[string]any{"_meta": json.RawMessage(h.meta())})
	res, err := callStateless(ctx, c, nil, "server/discover", params)
	if err != nil {
		return nil, fmt.Errorf("upstream[%s] (2026-07-28): %w", h.name, err)
	}
	if !slices.Contains(stringsOf(gjson.GetBytes(res, "supportedVersions")), mcp.ProtocolVersion20260728) {
		return res, errNotStateless
	}
	return res, nil
}

// rootsDeclared is told that a client declared roots: when the upstream
// was initialized without roots, which it cannot learn of without a
// restart, that is logged once.
func (h *handshake) rootsDeclared() {
	if len(h.cfg.Mcpx.Roots) > 0 || h.rootsLogged.Load() {
		return
	}
	d := h.declared()
	if d == nil || gjson.GetBytes(d, "roots").Exists() {
		return // not initialized yet, or told of roots
	}
	if h.rootsLogged.CompareAndSwap(false, true) {
		h.log.Info("a client declared roots, but the upstream was initialized without roots and cannot learn of them without a restart, which mcpx does not do; to declare roots from the start set mcpServers." + h.name + ".mcpx.client_capabilities (e.g. {\"roots\":{\"listChanged\":true}})")
	}
}

// rootsListChanged reports whether a change of the clients' roots is
// news to the server: it was told roots with listChanged and does not
// answer roots/list from its config.
func (h *handshake) rootsListChanged() bool {
	return len(h.cfg.Mcpx.Roots) == 0 && gjson.GetBytes(h.declared(), "roots.listChanged").Bool()
}
