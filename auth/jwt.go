package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/hashicorp/go-hclog"
)

// jwtVerifier checks bearer JWTs against a JWKS that keyfunc keeps
// fresh in the background.
type jwtVerifier struct {
	keys   keyfunc.Keyfunc
	parser *jwt.Parser
	user   string
	tenant string
}

// jwksUnknownKIDWait is how long a token with a "kid" the JWKS lacks
// waits for the refetch it triggers (refetches are rate limited): the
// caller gets its 401 promptly instead.
const jwksUnknownKIDWait = 2 * time.Second

func newJWTVerifier(ctx context.Context, c JWTConfig, audience string, client *http.Client, log hclog.Logger) (*jwtVerifier, error) {
	refresh := time.Duration(c.Refresh)
	if refresh <= 0 {
		refresh = DefaultJWKSRefresh
	}
	noErrFirst := true // an IdP down at start is logged; tokens fail until it answers
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{c.JWKSURL}, keyfunc.Override{
		Client:                    client,
		HTTPTimeout:               10 * time.Second,
		RefreshInterval:           refresh,
		RateLimitWaitMax:          jwksUnknownKIDWait,
		NoErrorReturnFirstHTTPReq: &noErrFirst,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) { log.Warn("fetching the JWKS failed", "url", u, "error", err) }
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: jwt.jwks_url: %w", ErrConfig, err)
	}
	algs := c.Algorithms
	if len(algs) == 0 {
		algs = DefaultAlgorithms()
	}
	leeway := time.Duration(c.Leeway)
	if leeway <= 0 {
		leeway = DefaultLeeway
	}
	if c.Audience != "" {
		audience = c.Audience
	}
	user := c.UserClaim
	if user == "" {
		user = DefaultUserClaim
	}
	return &jwtVerifier{
		keys: kf,
		parser: jwt.NewParser(jwt.WithValidMethods(algs), jwt.WithIssuer(c.Issuer), jwt.WithAudience(audience),
			jwt.WithLeeway(leeway), jwt.WithExpirationRequired(), jwt.WithIssuedAt()),
		user:   user,
		tenant: c.TenantClaim,
	}, nil
}

// verify returns the principal a JWT names, or an error that says why it
// is refused (expired, wrong audience, bad signature ...).
func (v *jwtVerifier) verify(ctx context.Context, tok string) (Principal, error) {
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(tok, claims, v.keys.KeyfuncCtx(ctx)); err != nil {
		return Principal{}, err
	}
	user, _ := claims[v.user].(string)
	if user == "" {
		return Principal{}, fmt.Errorf("claim %q: %w", v.user, errNoUser)
	}
	p := Principal{User: user}
	if v.tenant != "" {
		t, _ := claims[v.tenant].(string)
		if t == "" {
			return Principal{}, fmt.Errorf("claim %q: %w", v.tenant, errNoTenant)
		}
		p.Tenant = t
	}
	return p, nil
}

var (
	errNoUser   = errors.New("the token names no user")
	errNoTenant = errors.New("the token names no tenant")
)
