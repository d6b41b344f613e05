// Package auth is the access control of mcpx's HTTP surface
// (docs/operations.md, "Security: who reads what"): who a request is (a
// Principal, from a static bearer token or a JWT verified against a
// JWKS), what it may see (the artifacts of its tenant and user;
// another's answer 404), how often it may ask (per-principal and
// per-tool rate limits), and the guards of a loopback listener
// (Host/Origin checks against DNS rebinding). It also serves the MCP
// authorization spec's protected-resource metadata (RFC 9728), so OAuth
// clients find the authorization server from a 401.
//
// With no tokens and no JWT configured, a loopback listener has one local
// user who sees everything; any other listener refuses every request.
package auth

import (
	"context"
	"errors"

	"github.com/mcpx-dev/mcpx/store"
)

// Principal is who a request is.
type Principal struct {
	// Tenant and User name the caller; artifacts recorded under them are
	// the caller's. User is never empty for an authenticated principal.
	Tenant string `json:"tenant,omitempty"`
	User   string `json:"user,omitempty"`
	// Local is the one user of an unauthenticated loopback listener: it
	// sees every artifact, whoever stored it.
	Local bool `json:"local,omitempty"`
}

// Scope is the store filter of what p may see: its tenant and user, or
// everything for the local user.
func (p Principal) Scope() store.Scope {
	if p.Local {
		return store.Scope{}
	}
	return store.Scope{TenantID: p.Tenant, UserID: p.User}
}

// Owns reports whether an artifact or event recorded under s is p's:
// tenant and user must be equal (an empty tenant only matches an empty
// one, store.Owner's rule), unlike store.Scope.Contains where an empty
// field matches any.
func (p Principal) Owns(s store.Scope) bool {
	return p.Local || (p.User != "" && p.Owner().Holds(s))
}

// Owner is p as the store records who put an artifact.
func (p Principal) Owner() store.Owner { return store.Owner{TenantID: p.Tenant, UserID: p.User} }

// Holding returns artifact id as p may see it (store.Holding): under
// the first scope p put it under that match accepts (nil: any), with
// p's own session, trace and creation, whoever put the bytes first; ok
// is false when p holds it under none, or it is missing. The local user
// holds every artifact, seen through its first scope; a principal
// without a user holds none.
func (p Principal) Holding(ctx context.Context, st store.Store, id string, match func(store.Scope) bool) (store.Ref, bool, error) {
	switch {
	case p.Local:
		ref, err := st.Stat(ctx, id)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
			return store.Ref{}, false, nil
		}
		return ref, err == nil && (match == nil || match(ref.Scope)), err
	case p.User == "":
		return store.Ref{}, false, nil
	}
	return store.Holding(ctx, st, id, p.Owner(), match)
}

// Key names p in rate limits and logs: "tenant/user", "local".
func (p Principal) Key() string {
	if p.Local {
		return "local"
	}
	return p.Tenant + "/" + p.User
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal that Authenticator.Middleware put in
// ctx, and false when there is none.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
