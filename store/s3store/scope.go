package s3store

// Scopes live in key names (scope/<id>/<added ns>.<scope>), so that one
// listing answers InScope and a listing of scope/ gives a collector every
// artifact's scopes without reading a body.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// maxScopeInKey is the longest encoded scope kept in a key name (S3 keys
// hold 1024 bytes); a longer one is named by its hash and kept in the
// key's body.
const maxScopeInKey = 600

// hashedScope starts the key part of a scope kept in the body.
const hashedScope = "~"

// encodeScope returns the key part of sc: its JSON in base64url, or a
// hash (inKey false) when that is too long.
func encodeScope(sc store.Scope) (part string, inKey bool) {
	b, _ := json.Marshal(sc)
	enc := base64.RawURLEncoding.EncodeToString(b)
	if len(enc) <= maxScopeInKey {
		return enc, true
	}
	sum := sha256.Sum256(b)
	return hashedScope + hex.EncodeToString(sum[:]), false
}

// scopeKey is the key that records sc on id, added at t.
func (r *records) scopeKey(id string, t time.Time, sc store.Scope) string {
	part, _ := encodeScope(sc)
	return r.bucket.key("scope/", id+"/"+nanos(t)+"."+part)
}

// scopeEntry is one scope an artifact was put under.
type scopeEntry struct {
	key   string
	id    string
	added string // nanos
	scope store.Scope
}

// created is when the artifact was first put under e's scope (the
// record's creation stands in for a key that says none).
func (e scopeEntry) created(rec record) time.Time {
	if t, ok := parseNanos(e.added); ok {
		return t
	}
	return rec.Created
}

// parseScopeKey reads a key of scope/; a scope kept in the body is read
// with one GET. ok is false for a key the store did not make.
func (r *records) parseScopeKey(ctx context.Context, key string) (e scopeEntry, ok bool, err error) {
	rest, found := strings.CutPrefix(key, r.bucket.key("scope/", ""))
	if !found {
		return e, false, nil
	}
	id, name, found := strings.Cut(rest, "/")
	added, part, found2 := strings.Cut(name, ".")
	if !found || !found2 || !store.ValidID(id) || len(added) != 20 {
		return e, false, nil
	}
	e = scopeEntry{key: key, id: id, added: added}
	if strings.HasPrefix(part, hashedScope) {
		n, err := r.naming(ctx, key)
		if err != nil || n.Scope == nil {
			return e, false, err
		}
		e.scope = *n.Scope
		return e, true, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil || json.Unmarshal(b, &e.scope) != nil {
		return e, false, nil
	}
	return e, true, nil
}

// scopeKeys lists the scopes of id, first added first.
func (r *records) scopeKeys(ctx context.Context, id string) ([]scopeEntry, error) {
	return r.listScopes(ctx, "scope/"+id+"/")
}

// listScopes lists the scope keys under prefix (below the store's), in
// key order: by artifact, then first added first.
func (r *records) listScopes(ctx context.Context, prefix string) ([]scopeEntry, error) {
	var out []scopeEntry
	for obj, err := range r.bucket.keys(ctx, prefix, "") {
		if err != nil {
			return nil, err
		}
		e, ok, err := r.parseScopeKey(ctx, obj.key)
		if err != nil && !isNotFound(err) {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}
