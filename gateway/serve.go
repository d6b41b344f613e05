package gateway

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/transport"
)

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed
	// to call; a request without an Origin header (not from a browser) is
	// always allowed. Defaults to loopback origins only.
	AllowedOrigins []string
	// Auth authenticates every request (static tokens with tenant and
	// user, JWTs; see package auth), takes it from the principal's
	// request rate limit (429 when spent), and gives tools/call the
	// per-tool limit. The principal's tenant and user are recorded in
	// the scope of the artifacts its calls store. On a loopback listener
	// it also refuses (403) a Host that is not a loopback name or one of
	// its allowed hosts, as it does for the HTTP API (DNS rebinding).
	// Defaults to nil: Tokens.
	Auth *auth.Authenticator
	// Tokens maps bearer tokens to identities (users without a tenant);
	// when not empty and Auth is nil every request needs
	// "Authorization: Bearer TOKEN". Defaults to no authentication.
	Tokens map[string]string
	// MaxBody caps a POST body. Defaults to the gateway's
	// Limits.MaxMessageBytes.
	MaxBody int64
	// MaxSessions caps the open sessions. Defaults to the gateway's
	// Limits.MaxSessions.
	MaxSessions int
	// SessionIdleTimeout ends a session without requests or streams for
	// this long. Defaults to the gateway's Limits.SessionIdleTimeout.
	SessionIdleTimeout time.Duration
	// EventBuffer is how many events per session the event store keeps
	// for resumption (Last-Event-ID). Defaults to 1024.
	EventBuffer int
	// KeepAlive is the interval of SSE comments on idle streams. Defaults
	// to 25s.
	KeepAlive time.Duration
	// Logger defaults to the gateway's.
	Logger hclog.Logger
}

// HTTPHandler returns the streamable HTTP transport (MCP 2025-11-25):
// POST a message (the response comes as JSON, or as an SSE stream when the
// request asks for progress), GET the session's SSE stream for
// notifications (resumable with Last-Event-ID from the event store),
// DELETE to end the session. Mount it at /mcp.
func (g *Gateway) HTTPHandler(o HTTPOptions) http.Handler {
	c := transport.HTTPConfig(o)
	if c.MaxBody <= 0 {
		c.MaxBody = g.limits.MaxMessageBytes
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = g.limits.MaxSessions
	}
	if c.SessionIdleTimeout <= 0 {
		c.SessionIdleTimeout = time.Duration(g.limits.SessionIdleTimeout)
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = 1024
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 25 * time.Second
	}
	if c.Logger == nil {
		c.Logger = g.log
	}
	return transport.NewHTTP(g.shared(), c)
}

// ServeStdio serves one client over newline-delimited JSON-RPC on in and
// out (the MCP stdio transport) until in ends or ctx is done. Requests run
// concurrently; each message is written whole, and messages ready together
// share a write.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	if g.closed.Load() {
		return jsonrpc.ErrClosed
	}
	return transport.ServeStdio(ctx, g.shared(), g.stdioOwns, in, out)
}

// shared is what the gateway's transports serve with.
func (g *Gateway) shared() transport.Shared {
	return transport.Shared{Rooms: g.rooms, Limits: g.limits, Large: g.large, Quit: g.quit}
}
