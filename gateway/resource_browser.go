package gateway

// The upstreams' resources by server, for the HTTP API's resource
// browser (GET /resources/{server}; web.ResourceBrowser over these), and
// resource updates for its event bus.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
)

// Errors of ServerResources and ReadServerResource.
var (
	// ErrUnknownServer: no enabled upstream has that name, or it offers
	// no resources.
	ErrUnknownServer = errors.New("gateway: unknown server")
	// ErrUnknownResource: the upstream answered resources/read with
	// MCP's resource-not-found error.
	ErrUnknownResource = errors.New("gateway: unknown resource")
)

// resourceServer returns the named upstream when it offers resources.
func (g *Gateway) resourceServer(server string) (upstreamCaller, error) {
	u := g.rooms.Ups.Named(server)
	if u == nil || !u.Capability("resources") {
		return nil, fmt.Errorf("%w: %q", ErrUnknownServer, server)
	}
	return u, nil
}

// upstreamCaller is what the browser needs of an upstream.
type upstreamCaller interface {
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ServerResources returns one page of server's resources/list result as
// the upstream sends it (URIs unchanged); cursor is the upstream's.
func (g *Gateway) ServerResources(ctx context.Context, server, cursor string) (json.RawMessage, error) {
	u, err := g.resourceServer(server)
	if err != nil {
		return nil, err
	}
	var p json.RawMessage
	if cursor != "" {
		p, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	res, err := u.Call(ctx, "resources/list", p)
	if err != nil {
		return nil, fmt.Errorf("resources/list on %s: %w", server, err)
	}
	return res, nil
}

// ReadServerResource returns server's resources/read result of uri as
// the upstream sends it.
func (g *Gateway) ReadServerResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	u, err := g.resourceServer(server)
	if err != nil {
		return nil, err
	}
	p, _ := json.Marshal(map[string]string{"uri": uri})
	res, err := u.Call(ctx, "resources/read", p)
	var re *jsonrpc.Error
	if errors.As(err, &re) && re.Code == jsonrpc.CodeResourceNotFound {
		return nil, fmt.Errorf("%w: %s on %s", ErrUnknownResource, uri, server)
	}
	if err != nil {
		return nil, fmt.Errorf("resources/read on %s: %w", server, err)
	}
	if !gjson.GetBytes(res, "contents").IsArray() {
		return nil, fmt.Errorf("resources/read on %s: %w: no contents", server, jsonrpc.ErrUpstreamInvalidJSON)
	}
	return res, nil
}

// publishUpdate tells Options.OnResourceUpdated of uri, once for each
// principal among the sessions of subs (once with an empty scope when
// none is one).
func (g *Gateway) publishUpdate(server, uri string, subs []subscriptions.Subscriber) {
	if g.onUpdated == nil {
		return
	}
	seen := map[store.Scope]bool{}
	for _, sub := range subs {
		if s, ok := sub.(*session.Session); ok && s.User != "" {
			seen[store.Scope{TenantID: s.Tenant, UserID: s.User}] = true
		}
	}
	if len(seen) == 0 {
		g.onUpdated(observe.ResourceUpdate{Server: server, URI: uri})
		return
	}
	for sc := range seen {
		g.onUpdated(observe.ResourceUpdate{Server: server, URI: uri, Scope: sc})
	}
}
