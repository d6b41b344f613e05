// Package resources serves the upstreams' resources to clients: lists
// paged across upstreams and then the client's artifacts, reads whose
// blobs become artifacts, the generated resource tools for models that
// cannot call resources/read (tools.go), and the cache of reads
// (cache.go). Which upstream serves a URI is the router's (router.URIs);
// what a client may read of the artifacts, the artifact room's.
package resources

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
)

// pageCursor is the gateway's resources cursor: which source (an upstream
// index, or len(upstreams) for this session's artifacts) and that
// source's own cursor.
type pageCursor struct {
	Source int    `json:"s"`
	Cursor string `json:"c,omitempty"`
}

func encodeCursor(c pageCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (pageCursor, error) {
	var c pageCursor
	if s == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Source < 0 {
		return c, fmt.Errorf("%w: cursor %q is not one mcpx gave", jsonrpc.ErrBadParams, s)
	}
	return c, nil
}

// Resources serve resources to clients; each call names its Reader.
type Resources struct {
	ups   *router.Upstreams
	uris  *router.URIs
	art   *artifacts.Service
	eng   *engine.Engine
	cache *Cache
	log   hclog.Logger
}

// New returns the resources of ups, whose URIs uris resolve, blobs and
// artifacts handled by art, results of the generated tools transformed
// by eng, reads kept in cache.
func New(ups *router.Upstreams, uris *router.URIs, art *artifacts.Service, eng *engine.Engine, cache *Cache, log hclog.Logger) *Resources {
	return &Resources{ups: ups, uris: uris, art: art, eng: eng, cache: cache, log: log}
}

// List serves resources/list and resources/templates/list for rd: one
// upstream's page at a time, then rd's artifacts.
func (rs *Resources) List(ctx context.Context, rd artifacts.Reader, params json.RawMessage, templates bool) (json.RawMessage, error) {
	srcs := rs.ups.Offering("resources")
	cur, err := decodeCursor(gjson.GetBytes(params, "cursor").String())
	if err != nil {
		return nil, err
	}
	method, key := "resources/list", "resources"
	if templates {
		method, key = "resources/templates/list", "resourceTemplates"
	}
	out := []byte(`{"` + key + `":[]}`)
	for i := cur.Source; i <= len(srcs); i++ {
		c := ""
		if i == cur.Source {
			c = cur.Cursor
		}
		if i == len(srcs) {
			items, next, err := rs.art.Page(ctx, rd, templates, c)
			if err != nil {
				return nil, err
			}
			if items != nil {
				out, _ = sjson.SetRawBytes(out, key, items)
			}
			if next != "" {
				out, _ = sjson.SetBytes(out, "nextCursor", encodeCursor(pageCursor{Source: len(srcs), Cursor: next}))
			}
			return out, nil
		}
		u := srcs[i]
		p := json.RawMessage(nil)
		if c != "" {
			p, _ = json.Marshal(map[string]string{"cursor": c})
		}
		res, err := u.Call(ctx, method, p)
		if err != nil {
			rs.log.Warn("listing an upstream's resources failed; skipping it", "server", u.Name, "method", method, "error", err)
			continue
		}
		items := gjson.GetBytes(res, key)
		if items.IsArray() {
			page := []byte(items.Raw)
			if !templates {
				page = rs.uris.Expose(u, items)
			}
			out, _ = sjson.SetRawBytes(out, key, page)
		}
		next := ""
		if n := gjson.GetBytes(res, "nextCursor").String(); n != "" {
			next = encodeCursor(pageCursor{Source: i, Cursor: n})
		} else {
			next = encodeCursor(pageCursor{Source: i + 1})
		}
		out, _ = sjson.SetBytes(out, "nextCursor", next)
		return out, nil
	}
	return out, nil
}

// Read serves rd's resources/read of uri: blob contents are stored as
// artifacts and come back with their bytes and the ref in _meta.
func (rs *Resources) Read(ctx context.Context, rd artifacts.Reader, uri string, params json.RawMessage) (json.RawMessage, error) {
	if id, ok := artifacts.ID(uri); ok {
		return rs.art.Read(ctx, rd, uri, id)
	}
	k := cacheKey{session: rd.Session, uri: uri, kind: "direct"}
	if raw, ok := rs.cache.get(ctx, k); ok {
		return raw, nil
	}
	u, res, err := rs.uris.Read(ctx, uri, params)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), res...)
	var ids []string
	var perr error
	gjson.GetBytes(res, "contents").ForEach(func(idx, c gjson.Result) bool {
		blob := c.Get("blob")
		if blob.Type != gjson.String {
			return true
		}
		ref, err := rs.art.StoreBlob(ctx, rd, u.Name, c, blob.Str)
		if err != nil {
			perr = err
			return false
		}
		ids = append(ids, ref.ID)
		refJSON, _ := json.Marshal(rs.art.Link(ref))
		out, err = sjson.SetRawBytes(out, "contents."+idx.String()+"._meta."+strings.ReplaceAll(artifacts.MetaKey, "/", `\/`), refJSON)
		if err != nil {
			perr = err
			return false
		}
		return true
	})
	if perr != nil {
		// the bytes still reach the client; only the artifact is missing
		rs.log.Warn("storing a resource blob failed; passing it through", "uri", uri, "error", perr)
		return res, nil
	}
	rs.cache.put(k, out, ids)
	return out, nil
}
