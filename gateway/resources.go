package gateway

// Upstream resources: which upstream serves a URI, paged lists across
// upstreams, and reads whose blobs become artifacts.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

func (g *Gateway) ownerOf(uri string) *upstream.Upstream {
	g.ownerMu.RLock()
	u := g.owner[uri]
	g.ownerMu.RUnlock()
	if u != nil {
		return u
	}
	if g.single {
		return g.ups[g.order[0]]
	}
	return nil
}

// candidates are the upstreams that may serve uri: its owner, else every
// upstream with the resources capability.
func (g *Gateway) candidates(uri string) []*upstream.Upstream {
	if u, _, ok := g.resolveURI(uri); ok {
		if u == nil {
			return nil
		}
		return []*upstream.Upstream{u}
	}
	if u := g.ownerOf(uri); u != nil {
		return []*upstream.Upstream{u}
	}
	var out []*upstream.Upstream
	for _, name := range g.order {
		if u := g.ups[name]; u.Capability("resources") {
			out = append(out, u)
		}
	}
	return out
}

// readUpstream reads uri from the upstream that serves it.
func (g *Gateway) readUpstream(ctx context.Context, uri string, params json.RawMessage) (*upstream.Upstream, json.RawMessage, error) {
	if u, orig, ok := g.resolveURI(uri); ok {
		if u == nil {
			return nil, nil, fmt.Errorf("resources/read %s: no configured server by that name (want %s{server}/{uri}): %w", uri, upstreamURIPrefix, jsonrpc.ErrUnknownResource)
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
	for _, u := range g.candidates(uri) {
		res, err := u.Call(ctx, "resources/read", params)
		if err == nil {
			g.claim(u, uri)
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

// upstreamResources reads upstream resources for the engine's
// resourcelink layer (engine.ResourceReader): what a layer may reach of
// the gateway in the middle of Transform is the upstreams by name, not
// the gateway. It shares the gateway's map, which New fills.
type upstreamResources map[string]*upstream.Upstream

// ReadResource returns the resources/read result of uri on server.
func (ups upstreamResources) ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	u, ok := ups[server]
	if !ok {
		return nil, fmt.Errorf("read %s: server %q: %w", uri, server, jsonrpc.ErrUnknownResource)
	}
	params, _ := json.Marshal(map[string]string{"uri": uri})
	return u.Call(ctx, "resources/read", params)
}

var _ engine.ResourceReader = upstreamResources(nil)

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
	var srcs []*upstream.Upstream
	for _, name := range g.order {
		if u := g.ups[name]; u.Capability("resources") {
			srcs = append(srcs, u)
		}
	}
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
			return s.artifactPage(ctx, out, key, templates, c, len(srcs))
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
				page = g.exposeItems(u, items)
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
	if id, ok := artifactID(uri); ok {
		return s.readArtifact(ctx, uri, id)
	}
	k := cacheKey{session: s.ID, uri: uri, kind: "direct"}
	if raw, ok := s.g.cached(ctx, k); ok {
		return raw, nil
	}
	u, res, err := s.g.readUpstream(ctx, uri, params)
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
		ref, err := s.storeBlob(ctx, u.Name, c, blob.Str)
		if err != nil {
			perr = err
			return false
		}
		ids = append(ids, ref.ID)
		refJSON, _ := json.Marshal(s.g.link(ref))
		out, err = sjson.SetRawBytes(out, "contents."+idx.String()+"._meta."+strings.ReplaceAll(artifactMetaKey, "/", `\/`), refJSON)
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
