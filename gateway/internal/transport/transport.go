// Package transport serves the gateway's downstream clients: MCP over
// stdio (stdio.go: one client, one session) and over streamable HTTP
// (http.go: sessions by Mcp-Session-Id with their SSE event store, and
// stateless 2026-07-28 requests, era_http.go). A transport reads a
// message, finds or opens its session.Session, and hands the message to
// it; what the session answers it writes back. It holds the connections'
// state (the HTTP sessions, their events and streams) and nothing of the
// rooms a session is served with.
package transport

import (
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/semaphore"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
)

// Shared is what every transport of one gateway serves with.
type Shared struct {
	// Rooms are what the sessions the transport opens are served with.
	Rooms *session.Rooms
	// Limits bound messages and buffers; defaults applied.
	Limits config.Limits
	// Large is the bytes of large requests in flight, within
	// limits.large_request_bytes: every transport takes from it.
	Large *semaphore.Weighted
	// Quit is closed when the gateway closes.
	Quit <-chan struct{}
}

// HTTPConfig configures the streamable HTTP transport: the gateway's
// public HTTPOptions, converted, their defaults applied (gateway.HTTPOptions
// says what each field means). The fields stay those of HTTPOptions, in
// their order.
type HTTPConfig struct {
	AllowedOrigins     []string
	Auth               *auth.Authenticator
	Tokens             map[string]string
	MaxBody            int64
	MaxSessions        int
	SessionIdleTimeout time.Duration
	EventBuffer        int
	KeepAlive          time.Duration
	Logger             hclog.Logger
}
