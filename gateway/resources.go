package gateway

// Upstream resources: which upstream serves a URI, paged lists across
// upstreams, and reads whose blobs become artifacts.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
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

// listResources serves resources/list and resources/templates/list: one
// upstream's page at a time, then this session's artifacts.
func (s *session) listResources(ctx context.Context, params json.RawMessage, templates bool) (json.RawMessage, error) {
	g := s.g
	srcs := g.ups.Offering("resources")
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
			items, next, err := g.art.Page(ctx, s.reader(), templates, c)
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
			g.log.Warn("listing an upstream's resources failed; skipping it", "server", u.Name, "method", method, "error", err)
			continue
		}
		items := gjson.GetBytes(res, key)
		if items.IsArray() {
			page := []byte(items.Raw)
			if !templates {
				page = g.uris.Expose(u, items)
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

// readDirect serves a client's resources/read: blob contents are stored
// as artifacts and come back with their bytes and the ref in _meta.
func (s *session) readDirect(ctx context.Context, uri string, params json.RawMessage) (json.RawMessage, error) {
	if id, ok := artifacts.ID(uri); ok {
		return s.g.art.Read(ctx, s.reader(), uri, id)
	}
	k := cacheKey{session: s.ID, uri: uri, kind: "direct"}
	if raw, ok := s.g.cached(ctx, k); ok {
		return raw, nil
	}
	u, res, err := s.g.uris.Read(ctx, uri, params)
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
		ref, err := s.g.art.StoreBlob(ctx, s.reader(), u.Name, c, blob.Str)
		if err != nil {
			perr = err
			return false
		}
		ids = append(ids, ref.ID)
		refJSON, _ := json.Marshal(s.g.art.Link(ref))
		out, err = sjson.SetRawBytes(out, "contents."+idx.String()+"._meta."+strings.ReplaceAll(artifacts.MetaKey, "/", `\/`), refJSON)
		if err != nil {
			perr = err
			return false
		}
		return true
	})
	if perr != nil {
		// the bytes still reach the client; only the artifact is missing
		s.g.log.Warn("storing a resource blob failed; passing it through", "uri", uri, "error", perr)
		return res, nil
	}
	s.g.remember(k, out, ids)
	return out, nil
}
