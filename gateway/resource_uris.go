package gateway

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

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
const upstreamURIPrefix = "mcpx://upstream/"

// upstreamURI is server's uri in the gateway's namespaced form.
func upstreamURI(server, uri string) string { return upstreamURIPrefix + server + "/" + uri }

// resolveURI splits a namespaced URI into its upstream and the server's
// own URI. For any other URI it returns (nil, uri, false); for a
// namespaced one naming no configured server, (nil, uri, true).
func (g *Gateway) resolveURI(uri string) (*upstream.Upstream, string, bool) {
	rest, ok := strings.CutPrefix(uri, upstreamURIPrefix)
	if !ok {
		return nil, uri, false
	}
	server, orig, ok := strings.Cut(rest, "/")
	u := g.ups[server]
	if !ok || orig == "" || u == nil {
		return nil, uri, true
	}
	return u, orig, true
}

// claim records that u lists uri and returns the URI clients are given
// for it: uri itself, unless another server listed it first; then u's
// namespaced form, and the collision is logged once.
func (g *Gateway) claim(u *upstream.Upstream, uri string) string {
	if uri == "" {
		return uri
	}
	g.ownerMu.Lock()
	cur := g.owner[uri]
	if cur == nil {
		g.owner[uri] = u
	}
	first := false
	if cur != nil && cur != u {
		k := uri + "\x00" + u.Name
		if _, seen := g.collisions[k]; !seen {
			g.collisions[k] = struct{}{}
			first = true
		}
	}
	g.ownerMu.Unlock()
	if cur == nil || cur == u {
		return uri
	}
	alias := upstreamURI(u.Name, uri)
	if first {
		g.log.Warn("resource URI collision: two servers list the same URI; the bare URI stays with the first, the other is listed under its server's name",
			"uri", uri, "first", cur.Name, "server", u.Name, "listed_as", alias)
	}
	return alias
}

// exposeItems claims every resource of a listed page for u and returns
// the page's items with colliding URIs namespaced (raw itself when none
// collide).
func (g *Gateway) exposeItems(u *upstream.Upstream, items gjson.Result) []byte {
	var (
		vals    []gjson.Result
		exposed []string
		changed bool
	)
	items.ForEach(func(_, v gjson.Result) bool {
		uri := v.Get("uri").String()
		e := g.claim(u, uri)
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
