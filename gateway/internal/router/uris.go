package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// UpstreamURIPrefix starts the gateway's name for one server's resource:
// mcpx://upstream/{server}/{uri} is uri as that server serves it.
//
// Resource URIs reach clients unchanged, because tool results, resource
// links and subscriptions carry them verbatim. When two servers list the
// same URI, the first to list it keeps it (reads and subscriptions of the
// bare URI go there) and the other's is listed under this prefix, with a
// warning in the log naming both servers. The prefixed form works for
// every server and URI, listed or not, so a client can always say which
// server it means.
const UpstreamURIPrefix = "mcpx://upstream/"

// UpstreamURI is server's uri in the gateway's namespaced form.
func UpstreamURI(server, uri string) string { return UpstreamURIPrefix + server + "/" + uri }

// URIs know which upstream serves a resource URI: the first to list it
// owns it, and a URI two servers list is namespaced for the second.
type URIs struct {
	ups *Upstreams
	log hclog.Logger

	mu         sync.RWMutex
	owner      map[string]*upstream.Upstream // resource URI → the upstream that listed it first
	collisions map[string]struct{}           // uri + "\x00" + server, logged once
}

// NewURIs returns the URI owners of ups' resources, none known yet.
func NewURIs(ups *Upstreams, log hclog.Logger) *URIs {
	return &URIs{ups: ups, log: log, owner: map[string]*upstream.Upstream{}, collisions: map[string]struct{}{}}
}

// Resolve splits a namespaced URI into its upstream and the server's
// own URI. For any other URI it returns (nil, uri, false); for a
// namespaced one naming no configured server, (nil, uri, true).
func (r *URIs) Resolve(uri string) (*upstream.Upstream, string, bool) {
	rest, ok := strings.CutPrefix(uri, UpstreamURIPrefix)
	if !ok {
		return nil, uri, false
	}
	server, orig, ok := strings.Cut(rest, "/")
	u := r.ups.Named(server)
	if !ok || orig == "" || u == nil {
		return nil, uri, true
	}
	return u, orig, true
}

// OwnerOf is the upstream that listed uri first; with one upstream,
// that one.
func (r *URIs) OwnerOf(uri string) *upstream.Upstream {
	r.mu.RLock()
	u := r.owner[uri]
	r.mu.RUnlock()
	if u != nil {
		return u
	}
	return r.ups.Only()
}

// Candidates are the upstreams that may serve uri: its owner, else every
// upstream with the resources capability.
func (r *URIs) Candidates(uri string) []*upstream.Upstream {
	if u, _, ok := r.Resolve(uri); ok {
		if u == nil {
			return nil
		}
		return []*upstream.Upstream{u}
	}
	if u := r.OwnerOf(uri); u != nil {
		return []*upstream.Upstream{u}
	}
	return r.ups.Offering("resources")
}

// Claim records that u lists uri and returns the URI clients are given
// for it: uri itself, unless another server listed it first; then u's
// namespaced form, and the collision is logged once.
func (r *URIs) Claim(u *upstream.Upstream, uri string) string {
	if uri == "" {
		return uri
	}
	r.mu.Lock()
	cur := r.owner[uri]
	if cur == nil {
		r.owner[uri] = u
	}
	first := false
	if cur != nil && cur != u {
		k := uri + "\x00" + u.Name
		if _, seen := r.collisions[k]; !seen {
			r.collisions[k] = struct{}{}
			first = true
		}
	}
	r.mu.Unlock()
	if cur == nil || cur == u {
		return uri
	}
	alias := UpstreamURI(u.Name, uri)
	if first {
		r.log.Warn("resource URI collision: two servers list the same URI; the bare URI stays with the first, the other is listed under its server's name",
			"uri", uri, "first", cur.Name, "server", u.Name, "listed_as", alias)
	}
	return alias
}

// Expose claims every resource of a listed page for u and returns the
// page's items with colliding URIs namespaced (raw itself when none
// collide).
func (r *URIs) Expose(u *upstream.Upstream, items gjson.Result) []byte {
	var (
		vals    []gjson.Result
		exposed []string
		changed bool
	)
	items.ForEach(func(_, v gjson.Result) bool {
		uri := v.Get("uri").String()
		e := r.Claim(u, uri)
		changed = changed || e != uri
		vals = append(vals, v)
		exposed = append(exposed, e)
		return true
	})
	if !changed {
		return []byte(items.Raw)
	}
	out := []byte("[")
	for i, v := range vals {
		if i > 0 {
			out = append(out, ',')
		}
		item := []byte(v.Raw)
		if exposed[i] != v.Get("uri").String() {
			item, _ = sjson.SetBytes(item, "uri", exposed[i])
		}
		out = append(out, item...)
	}
	return append(out, ']')
}

// Read reads uri from the upstream that serves it.
func (r *URIs) Read(ctx context.Context, uri string, params json.RawMessage) (*upstream.Upstream, json.RawMessage, error) {
	if u, orig, ok := r.Resolve(uri); ok {
		if u == nil {
			return nil, nil, fmt.Errorf("resources/read %s: no configured server by that name (want %s{server}/{uri}): %w", uri, UpstreamURIPrefix, jsonrpc.ErrUnknownResource)
		}
		res, err := u.Call(ctx, "resources/read", withURI(params, orig))
		if err != nil {
			return nil, nil, fmt.Errorf("resources/read %s: %w", uri, err)
		}
		return u, renameContents(res, orig, uri), nil
	}
	if params == nil {
		params, _ = json.Marshal(map[string]string{"uri": uri})
	}
	var errs []error
	for _, u := range r.Candidates(uri) {
		res, err := u.Call(ctx, "resources/read", params)
		if err == nil {
			r.Claim(u, uri)
			return u, res, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return nil, nil, fmt.Errorf("resources/read %s: %w", uri, errs[0])
	}
	if len(errs) == 0 {
		return nil, nil, fmt.Errorf("resources/read %s: no server offers resources: %w", uri, jsonrpc.ErrUnknownResource)
	}
	return nil, nil, fmt.Errorf("resources/read %s: %w: %w", uri, jsonrpc.ErrUnknownResource, errors.Join(errs...))
}

// withURI returns params (or a new object) with "uri" set to uri.
func withURI(params json.RawMessage, uri string) json.RawMessage {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	out, err := sjson.SetBytes(append([]byte(nil), params...), "uri", uri)
	if err != nil {
		b, _ := json.Marshal(map[string]string{"uri": uri})
		return b
	}
	return out
}

// renameContents sets the uri of every content of a resources/read
// result that is orig to exposed, so a client that read a namespaced URI
// gets contents under the URI it asked for.
func renameContents(res json.RawMessage, orig, exposed string) json.RawMessage {
	out := res
	gjson.GetBytes(res, "contents").ForEach(func(idx, c gjson.Result) bool {
		if c.Get("uri").String() == orig {
			if b, err := sjson.SetBytes(append([]byte(nil), out...), "contents."+idx.String()+".uri", exposed); err == nil {
				out = b
			}
		}
		return true
	})
	return out
}
