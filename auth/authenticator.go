package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Errors of Authenticate. Middleware answers 401 for the first two (with
// WWW-Authenticate) and 403 for the last.
var (
	// ErrNoCredentials: the request carries no bearer token.
	ErrNoCredentials = errors.New("auth: no bearer token")
	// ErrBadToken: the token is unknown, or a JWT that fails verification.
	ErrBadToken = errors.New("auth: invalid token")
	// ErrNotLoopback: nothing is configured to authenticate with and the
	// listener is not loopback, so nobody may call.
	ErrNotLoopback = errors.New("auth: no tokens or JWT configured and the listener is not loopback")
)

// Options configure an Authenticator.
type Options struct {
	Config Config
	// Loopback says the listener is on a loopback address: without
	// tokens or JWT its callers are the local user, and Guard checks
	// Host and Origin.
	Loopback bool
	// BaseURL is where the HTTP surface is reachable; the metadata's
	// resource defaults to it. Required for the metadata.
	BaseURL string
	// HTTPClient fetches the JWKS, each response read up to
	// JWTConfig.MaxJWKSBytes. Defaults to http.DefaultClient.
	HTTPClient *http.Client
	// Logger defaults to a null logger.
	Logger hclog.Logger
}

// Authenticator says who a request is. Safe for concurrent use.
type Authenticator struct {
	c        Config
	loopback bool
	resource string
	tokens   *tokenTable
	jwt      *jwtVerifier
	limits   *RateLimiter
	log      hclog.Logger
}

// New checks o and returns an Authenticator; with a JWT configuration
// it starts fetching the JWKS, until ctx ends.
func New(ctx context.Context, o Options) (*Authenticator, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	a := &Authenticator{
		c: o.Config, loopback: o.Loopback, resource: o.Config.Resource,
		tokens: newTokenTable(o.Config.Tokens), limits: NewRateLimiter(o.Config.Limits), log: log.Named("auth"),
	}
	if a.resource == "" {
		a.resource = strings.TrimRight(o.BaseURL, "/")
	}
	if j := o.Config.JWT; j != nil {
		client := o.HTTPClient
		if client == nil {
			client = http.DefaultClient
		}
		v, err := newJWTVerifier(ctx, *j, a.resource, client, a.log)
		if err != nil {
			return nil, err
		}
		a.jwt = v
	}
	return a, nil
}

// Limiter returns the rate limiter (the gateway's tools/call takes from
// it too).
func (a *Authenticator) Limiter() *RateLimiter { return a.limits }

// Authenticate returns the principal of r.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	if !a.c.Enabled() {
		if a.loopback {
			return Principal{Local: true}, nil
		}
		return Principal{}, ErrNotLoopback
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return Principal{}, ErrNoCredentials
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return Principal{}, fmt.Errorf("%w: want \"Authorization: Bearer TOKEN\"", ErrBadToken)
	}
	if id, ok := a.tokens.lookup(tok); ok {
		return Principal{Tenant: id.Tenant, User: id.User}, nil
	}
	if a.jwt != nil && strings.Count(tok, ".") == 2 {
		p, err := a.jwt.verify(r.Context(), tok)
		if err != nil {
			return Principal{}, fmt.Errorf("%w: %w", ErrBadToken, err)
		}
		return p, nil
	}
	return Principal{}, ErrBadToken
}

// Middleware guards (see Guard), authenticates and rate-limits each
// request, and hands on those that pass with their principal in the
// context (FromContext). A refusal is 401 with a WWW-Authenticate that
// names the protected-resource metadata, 403, or 429 with Retry-After.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return a.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r)
		if err != nil {
			a.Refuse(w, err)
			return
		}
		if err := a.limits.AllowRequest(p); err != nil {
			var rl *RateLimitError
			errors.As(err, &rl)
			rl.WriteHTTP(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	}))
}

// Refuse answers an error of Authenticate.
func (a *Authenticator) Refuse(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNotLoopback) {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	ch := fmt.Sprintf(`Bearer resource_metadata=%q`, a.MetadataURL())
	msg := "authentication required"
	if errors.Is(err, ErrBadToken) {
		ch += `, error="invalid_token"`
		msg = "invalid token"
		a.log.Info("token refused", "error", err)
	}
	w.Header().Set("WWW-Authenticate", ch)
	http.Error(w, msg, http.StatusUnauthorized)
}
