package transport

// Access control of /mcp: the same principals as the HTTP API (package
// auth: static tokens with tenant and user, JWTs), its request rate limit
// on the transport (429) and its per-tool limit on tools/call (JSON-RPC
// error auth.JSONRPCRateLimited, session.Identity's limiter).

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
)

// authenticate says who r is: through HTTPConfig.Auth when set (and
// takes a request from the principal's rate limit), else the legacy
// token table. On false it has answered (401, 403 or 429).
func (srv *HTTP) authenticate(w http.ResponseWriter, r *http.Request) (session.Identity, bool) {
	if a := srv.o.Auth; a != nil {
		p, err := a.Authenticate(r)
		if err != nil {
			a.Refuse(w, err)
			return session.Identity{}, false
		}
		if err := a.Limiter().AllowRequest(p); err != nil {
			var rl *auth.RateLimitError
			if errors.As(err, &rl) {
				rl.WriteHTTP(w)
			} else {
				http.Error(w, err.Error(), http.StatusTooManyRequests)
			}
			return session.Identity{}, false
		}
		if p.Local {
			return session.Identity{Limiter: a.Limiter()}, true
		}
		return session.Identity{Tenant: p.Tenant, User: p.User, Limiter: a.Limiter()}, true
	}
	if len(srv.o.Tokens) == 0 {
		return session.Identity{}, true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok {
		for t, user := range srv.o.Tokens {
			if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
				return session.Identity{User: user}, true
			}
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcpx"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
	return session.Identity{}, false
}
