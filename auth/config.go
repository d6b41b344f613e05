package auth

// The access configuration of the HTTP surface (serve.auth in the config
// file): tokens, JWT verification and rate limits, their defaults and
// their validation.

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

const (
	// DefaultUserClaim is the JWT claim that names the user.
	DefaultUserClaim = "sub"
	// DefaultLeeway is the clock skew allowed on a JWT's exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// DefaultJWKSRefresh is how often the JWKS is fetched again.
	DefaultJWKSRefresh = time.Hour
	// DefaultMaxJWKSBytes is JWTConfig.MaxJWKSBytes's default: an
	// identity provider's key set is a few KiB; a response past this is
	// not a key set.
	DefaultMaxJWKSBytes = 1 << 20
	// JWKSUnknownKIDInterval is the least time between two fetches of the
	// JWKS that tokens with an unknown "kid" cause: anyone can send such
	// a token, unauthenticated, so they cannot make the gateway fetch
	// more often than this (the periodic refresh is apart).
	JWKSUnknownKIDInterval = 5 * time.Minute
	// DefaultRequestsPerSecond is the sustained request rate of one
	// principal on the HTTP surface.
	DefaultRequestsPerSecond = 50
	// DefaultRequestBurst is how many requests a principal may make at
	// once above that rate.
	DefaultRequestBurst = 100
	// DefaultToolCallsPerSecond is the sustained rate of calls (a
	// transform, a tool call) of one principal to one server's tool.
	DefaultToolCallsPerSecond = 10
	// DefaultToolCallBurst is the burst of those calls.
	DefaultToolCallBurst = 20
	// DefaultMaxLimiters bounds the rate limiters kept (one per principal,
	// one per principal and tool); the least recently used go first.
	DefaultMaxLimiters = 10000
)

// DefaultAlgorithms returns the JWT signature algorithms accepted by
// default: asymmetric only, so a JWKS's public keys can never be used as
// an HMAC secret. A new slice each call: no caller can change another's.
func DefaultAlgorithms() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

// Config configures an Authenticator. The zero value has no tokens and no
// JWT: a loopback listener then has one local user, any other refuses.
//
//	{"tokens": {"${ALICE_TOKEN}": {"tenant": "acme", "user": "alice"}},
//	 "jwt": {"jwks_url": "https://idp.example/jwks.json", "issuer": "https://idp.example/", "audience": "https://mcpx.example/"},
//	 "limits": {"requests_per_second": 50}}
type Config struct {
	// Tokens maps static bearer tokens to the identity they stand for.
	// Defaults to none.
	Tokens map[string]Identity `json:"tokens,omitempty"`
	// JWT accepts bearer JWTs verified against a JWKS. Defaults to off.
	JWT *JWTConfig `json:"jwt,omitempty"`
	// Resource is this server's canonical URL, the "resource" of its
	// protected-resource metadata (RFC 9728) and the audience a JWT must
	// name when JWT.Audience is empty. Defaults to the serving base URL.
	Resource string `json:"resource,omitempty"`
	// AuthorizationServers are the OAuth authorization servers (issuer
	// URLs) the metadata points clients to. Defaults to JWT.Issuer.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// AllowedHosts are Host header values (host or host:port) accepted on
	// a loopback listener besides loopback names. Defaults to none
	// (loopback only): DNS-rebinding protection.
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	// AllowedOrigins are browser origins (scheme://host[:port]) accepted
	// besides loopback ones. Defaults to none (loopback only), for the
	// same reason.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// Limits are the rate limits. Defaults to Limits' defaults.
	Limits Limits `json:"limits,omitzero"`
}

// JWTConfig says which JWTs are accepted.
type JWTConfig struct {
	// JWKSURL is where the signing keys are (https, or http on loopback).
	// Required.
	JWKSURL string `json:"jwks_url"`
	// Issuer is the "iss" a token must carry. Required.
	Issuer string `json:"issuer"`
	// Audience is an "aud" a token must carry. Defaults to Config.Resource.
	Audience string `json:"audience,omitempty"`
	// UserClaim names the user. Defaults to DefaultUserClaim ("sub").
	UserClaim string `json:"user_claim,omitempty"`
	// TenantClaim names the tenant. Defaults to "" (no tenant).
	TenantClaim string `json:"tenant_claim,omitempty"`
	// Algorithms are the accepted "alg"s. Defaults to DefaultAlgorithms().
	Algorithms []string `json:"algorithms,omitempty"`
	// Leeway is the clock skew allowed. Defaults to DefaultLeeway.
	Leeway store.Duration `json:"leeway,omitempty"`
	// Refresh is how often the JWKS is fetched again (an unknown "kid"
	// fetches it sooner, at most every JWKSUnknownKIDInterval). Defaults
	// to DefaultJWKSRefresh.
	Refresh store.Duration `json:"refresh,omitempty"`
	// MaxJWKSBytes bounds a JWKS response's body: a larger one fails the
	// fetch, logged, and the keys fetched before stay in use. Defaults to
	// DefaultMaxJWKSBytes (1 MiB).
	MaxJWKSBytes int64 `json:"max_jwks_bytes,omitempty"`
}

// WithDefaults returns j with every zero field set to its default.
func (j JWTConfig) WithDefaults() JWTConfig {
	if j.UserClaim == "" {
		j.UserClaim = DefaultUserClaim
	}
	if len(j.Algorithms) == 0 {
		j.Algorithms = DefaultAlgorithms()
	}
	if j.Leeway <= 0 {
		j.Leeway = store.Duration(DefaultLeeway)
	}
	if j.Refresh <= 0 {
		j.Refresh = store.Duration(DefaultJWKSRefresh)
	}
	if j.MaxJWKSBytes <= 0 {
		j.MaxJWKSBytes = DefaultMaxJWKSBytes
	}
	return j
}

// Limits are the rate limits, per principal and per principal and tool.
// A rate of -1 turns that limit off.
type Limits struct {
	// RequestsPerSecond limits each principal's requests to the HTTP
	// surface. The defaults of both rates apply to authenticated
	// principals: the local user of an unauthenticated loopback listener
	// is limited only by a rate set here. Defaults to
	// DefaultRequestsPerSecond.
	RequestsPerSecond float64 `json:"requests_per_second,omitempty"`
	// RequestBurst is how many requests over RequestsPerSecond a
	// principal may make at once. Defaults to DefaultRequestBurst.
	RequestBurst int `json:"request_burst,omitempty"`
	// ToolCallsPerSecond limits each principal's calls of one server's
	// tool (POST /transform; the gateway's tools/call). Defaults to
	// DefaultToolCallsPerSecond.
	ToolCallsPerSecond float64 `json:"tool_calls_per_second,omitempty"`
	// ToolCallBurst is how many calls over ToolCallsPerSecond a principal
	// may make at once. Defaults to DefaultToolCallBurst.
	ToolCallBurst int `json:"tool_call_burst,omitempty"`
	// MaxLimiters bounds the limiters kept in memory. Defaults to
	// DefaultMaxLimiters.
	MaxLimiters int `json:"max_limiters,omitempty"`
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.RequestsPerSecond == 0 {
		l.RequestsPerSecond = DefaultRequestsPerSecond
	}
	if l.RequestBurst <= 0 {
		l.RequestBurst = DefaultRequestBurst
	}
	if l.ToolCallsPerSecond == 0 {
		l.ToolCallsPerSecond = DefaultToolCallsPerSecond
	}
	if l.ToolCallBurst <= 0 {
		l.ToolCallBurst = DefaultToolCallBurst
	}
	if l.MaxLimiters <= 0 {
		l.MaxLimiters = DefaultMaxLimiters
	}
	return l
}

// ErrConfig is returned for a configuration no Authenticator can use.
var ErrConfig = errors.New("auth: bad configuration")

// Validate reports a configuration no Authenticator can use.
func (c Config) Validate() error {
	for tok, id := range c.Tokens {
		if tok == "" || id.User == "" {
			return fmt.Errorf("%w: tokens and their users must not be empty", ErrConfig)
		}
	}
	if j := c.JWT; j != nil {
		u, err := url.Parse(j.JWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%w: jwt.jwks_url %q: want an absolute http(s) URL", ErrConfig, j.JWKSURL)
		}
		if j.Issuer == "" {
			return fmt.Errorf("%w: jwt.issuer is required", ErrConfig)
		}
		if j.Audience == "" && c.Resource == "" {
			return fmt.Errorf("%w: jwt.audience (or resource) is required", ErrConfig)
		}
		if j.Leeway < 0 || j.Refresh < 0 || j.MaxJWKSBytes < 0 {
			return fmt.Errorf("%w: jwt.leeway, jwt.refresh and jwt.max_jwks_bytes must not be negative", ErrConfig)
		}
		for _, a := range j.Algorithms {
			if a == "none" || len(a) > 2 && a[:2] == "HS" {
				return fmt.Errorf("%w: jwt.algorithms: %q is not accepted (asymmetric algorithms only)", ErrConfig, a)
			}
		}
	}
	if c.Resource != "" {
		if u, err := url.Parse(c.Resource); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("%w: resource %q: want an absolute URL", ErrConfig, c.Resource)
		}
	}
	if c.Limits.RequestBurst < 0 || c.Limits.ToolCallBurst < 0 || c.Limits.MaxLimiters < 0 {
		return fmt.Errorf("%w: limits must not be negative", ErrConfig)
	}
	return nil
}

// Enabled reports whether c authenticates anyone (tokens or JWT).
func (c Config) Enabled() bool { return len(c.Tokens) > 0 || c.JWT != nil }

// Identity is what a static token stands for.
type Identity struct {
	// Tenant scopes the user's artifacts. Defaults to "" (no tenant).
	Tenant string `json:"tenant,omitempty"`
	// User is the user the token authenticates. Required.
	User string `json:"user"`
}

// Identities counts the distinct identities c's tokens stand for:
// several tokens of one tenant and user are one principal.
func (c Config) Identities() int {
	seen := make(map[Identity]struct{}, len(c.Tokens))
	for _, id := range c.Tokens {
		seen[id] = struct{}{}
	}
	return len(seen)
}
