package gateway

// Access control of /mcp (issue 19): the same principals as the HTTP API
// (package auth: static tokens with tenant and user, JWTs), its request
// rate limit on the transport (429) and its per-tool limit on tools/call
// (JSON-RPC error auth.JSONRPCRateLimited).

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/mcpx-dev/mcpx/auth"
)

// identity is who a session or request is: its tenant and user ("" over
// stdio and for the local user of an unauthenticated listener), and the
// limiter its tool calls take from (nil: unlimited).
type identity struct {
	tenant, user string
	limiter      *auth.RateLimiter
}

// same reports whether c and o are the same principal (a session
// belongs to the principal that opened it).
func (c identity) same(o identity) bool { return c.tenant == o.tenant && c.user == o.user }

// principal is c as auth names it.
func (c identity) principal() auth.Principal {
	if c.user == "" {
		return auth.Principal{Local: true}
	}
	return auth.Principal{Tenant: c.tenant, User: c.user}
}

// authenticate says who r is: through HTTPOptions.Auth when set (and
// takes a request from the principal's rate limit), else the legacy
// token table. On false it has answered (401, 403 or 429).
func (srv *httpServer) authenticate(w http.ResponseWriter, r *http.Request) (identity, bool) {
	if a := srv.o.Auth; a != nil {
		p, err := a.Authenticate(r)
		if err != nil {
			a.Refuse(w, err)
			return identity{}, false
		}
		if err := a.Limiter().AllowRequest(p); err != nil {
			var rl *auth.RateLimitError
			if errors.As(err, &rl) {
				rl.WriteHTTP(w)
			} else {
				http.Error(w, err.Error(), http.StatusTooManyRequests)
			}
			return identity{}, false
		}
		if p.Local {
			return identity{limiter: a.Limiter()}, true
		}
		return identity{tenant: p.Tenant, user: p.User, limiter: a.Limiter()}, true
	}
	if len(srv.o.Tokens) == 0 {
		return identity{}, true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok {
		for t, user := range srv.o.Tokens {
			if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
				return identity{user: user}, true
			}
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcpx"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
	return identity{}, false
}

// allowToolCall takes one call of server's tool from the session's
// per-tool rate limit; the error is a JSON-RPC error with code
// auth.JSONRPCRateLimited and the limit and retry delay as data.
func (s *session) allowToolCall(server, tool string) error {
	if s.limiter == nil {
		return nil
	}
	err := s.limiter.AllowToolCall(s.identity().principal(), server, tool)
	var rl *auth.RateLimitError
	if !errors.As(err, &rl) {
		return err
	}
	data, _ := json.Marshal(rl.Data())
	return &rpcError{Code: auth.JSONRPCRateLimited, Message: rl.Error(), Data: data}
}

func (s *session) identity() identity {
	return identity{tenant: s.Tenant, user: s.User, limiter: s.limiter}
}

// principalKey names the session's principal as auth does
// (auth.Principal.Key): a per_user server's process is that principal's.
func (s *session) principalKey() string { return s.identity().principal().Key() }
