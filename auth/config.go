package auth

import "github.com/mcpx-dev/mcpx/auth/authconfig"

// The access configuration is declared in auth/authconfig, which links
// no JWT or HTTP package, so that a config tree can name it without this
// package (internal/cli/parts says why).
type (
	Config    = authconfig.Config
	JWTConfig = authconfig.JWTConfig
	Limits    = authconfig.Limits
	Identity  = authconfig.Identity
)

// Defaults of Config.
const (
	DefaultUserClaim          = authconfig.DefaultUserClaim
	DefaultLeeway             = authconfig.DefaultLeeway
	DefaultJWKSRefresh        = authconfig.DefaultJWKSRefresh
	DefaultMaxJWKSBytes       = authconfig.DefaultMaxJWKSBytes
	JWKSUnknownKIDInterval    = authconfig.JWKSUnknownKIDInterval
	DefaultRequestsPerSecond  = authconfig.DefaultRequestsPerSecond
	DefaultRequestBurst       = authconfig.DefaultRequestBurst
	DefaultToolCallsPerSecond = authconfig.DefaultToolCallsPerSecond
	DefaultToolCallBurst      = authconfig.DefaultToolCallBurst
)

// DefaultAlgorithms are the JWT signature algorithms accepted when
// JWTConfig.Algorithms is empty.
func DefaultAlgorithms() []string { return authconfig.DefaultAlgorithms() }

// ErrConfig is returned for a configuration that cannot be used.
var ErrConfig = authconfig.ErrConfig
