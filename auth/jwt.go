package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"
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
	c = c.WithDefaults()
	noErrFirst := true // an IdP down at start is logged; tokens fail until it answers
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{c.JWKSURL}, keyfunc.Override{
		Client:                    jwksClient(client, c.MaxJWKSBytes),
		HTTPTimeout:               10 * time.Second,
		RefreshInterval:           time.Duration(c.Refresh),
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(JWKSUnknownKIDInterval), 1),
		RateLimitWaitMax:          jwksUnknownKIDWait,
		NoErrorReturnFirstHTTPReq: &noErrFirst,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
					log.Warn("fetching the JWKS failed: the response is larger than jwt.max_jwks_bytes (raise it if the key set is that large); the keys fetched before stay in use", "url", u, "max_jwks_bytes", tooLarge.Limit)
					return
				}
				log.Warn("fetching the JWKS failed; the keys fetched before stay in use", "url", u, "error", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: jwt.jwks_url: %w", ErrConfig, err)
	}
	audience = cmp.Or(c.Audience, audience)
	return &jwtVerifier{
		keys: kf,
		parser: jwt.NewParser(jwt.WithValidMethods(c.Algorithms), jwt.WithIssuer(c.Issuer), jwt.WithAudience(audience),
			jwt.WithLeeway(time.Duration(c.Leeway)), jwt.WithExpirationRequired(), jwt.WithIssuedAt()),
		user:   c.UserClaim,
		tenant: c.TenantClaim,
	}, nil
}

// jwksClient is client with every response body capped at max bytes: the
// JWKS is fetched on an unauthenticated request's unknown "kid", so its
// size is the identity provider's (or whoever answers for it) to choose.
// Reading past the cap fails with *http.MaxBytesError; jwkset then keeps
// the keys it has.
func jwksClient(client *http.Client, max int64) *http.Client {
	c := *client
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = cappedTransport{next: next, max: max}
	return &c
}

type cappedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	// A nil ResponseWriter: no server to tell, only the read to stop.
	resp.Body = http.MaxBytesReader(nil, resp.Body, t.max)
	return resp, nil
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
