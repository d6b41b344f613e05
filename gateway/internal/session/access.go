package session

// Who a session is, and the per-tool rate limit its calls take from:
// the same principals as the HTTP API (package auth: static tokens with
// tenant and user, JWTs).

import (
	"encoding/json"
	"errors"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// Identity is who a session or request is: its tenant and user ("" over
// stdio and for the local user of an unauthenticated listener), and the
// limiter its tool calls take from (nil: unlimited).
type Identity struct {
	Tenant, User string
	Limiter      *auth.RateLimiter
}

// Same reports whether c and o are the same principal (a session
// belongs to the principal that opened it).
func (c Identity) Same(o Identity) bool { return c.Tenant == o.Tenant && c.User == o.User }

// principal is c as auth names it.
func (c Identity) principal() auth.Principal {
	if c.User == "" {
		return auth.Principal{Local: true}
	}
	return auth.Principal{Tenant: c.Tenant, User: c.User}
}

// allowToolCall takes one call of server's tool from the session's
// per-tool rate limit; the error is a JSON-RPC error with code
// auth.JSONRPCRateLimited and the limit and retry delay as data.
func (s *Session) allowToolCall(server, tool string) error {
	if s.limiter == nil {
		return nil
	}
	err := s.limiter.AllowToolCall(s.Identity().principal(), server, tool)
	var rl *auth.RateLimitError
	if !errors.As(err, &rl) {
		return err
	}
	data, _ := json.Marshal(rl.Data())
	return &jsonrpc.Error{Code: auth.JSONRPCRateLimited, Message: rl.Error(), Data: data}
}

// Identity is who the session is.
func (s *Session) Identity() Identity {
	return Identity{Tenant: s.Tenant, User: s.User, Limiter: s.limiter}
}

// principalKey names the session's principal as auth does
// (auth.Principal.Key): a per_user server's process is that principal's.
func (s *Session) principalKey() string { return s.Identity().principal().Key() }
