package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

// ArtifactMetaKey is the _meta key under which a resources/read content
// carries the ref of the artifact its blob was stored as.
const ArtifactMetaKey = "mcpx/artifact"

// cacheKey and cacheEntry are the resource cache (RFC 7.3): reads are
// kept per session and URI until the upstream says the resource changed.
type cacheKey struct {
	session, uri, kind string
}

type cacheEntry struct {
	raw json.RawMessage
	ids []string // artifacts the entry refers to; a deleted one voids it
}

func (g *Gateway) cached(ctx context.Context, k cacheKey) (json.RawMessage, bool) {
	g.cacheMu.Lock()
	e, ok := g.cache[k]
	g.cacheMu.Unlock()
	if !ok {
		return nil, false
	}
	for _, id := range e.ids {
		if ok, err := g.st.Exists(ctx, id); err != nil || !ok {
			g.cacheMu.Lock()
			delete(g.cache, k)
			g.cacheMu.Unlock()
			return nil, false
		}
	}
	return e.raw, true
}

func (g *Gateway) remember(k cacheKey, raw json.RawMessage, ids []string) {
	if k.session == "" {
		return // a stateless request's: no session end would drop it (era.go)
	}
	g.cacheMu.Lock()
	g.cache[k] = cacheEntry{raw: raw, ids: ids}
	g.cacheMu.Unlock()
}

// invalidate drops every cached read of uri.
func (g *Gateway) invalidate(uri string) {
	g.cacheMu.Lock()
	defer g.cacheMu.Unlock()
	for k := range g.cache {
		if k.uri == uri {
			delete(g.cache, k)
		}
	}
}

func (g *Gateway) dropCache(session string) {
	g.cacheMu.Lock()
	defer g.cacheMu.Unlock()
	for k := range g.cache {
		if k.session == session {
			delete(g.cache, k)
		}
	}
}

// CachedReads returns how many resource reads the cache holds (for tests
// and status).
func (g *Gateway) CachedReads() int {
	g.cacheMu.Lock()
	defer g.cacheMu.Unlock()
	return len(g.cache)
}

func (g *Gateway) ownerOf(uri string) *upstream {
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
func (g *Gateway) candidates(uri string) []*upstream {
	if u, _, ok := g.resolveURI(uri); ok {
		if u == nil {
			return nil
		}
		return []*upstream{u}
	}
	if u := g.ownerOf(uri); u != nil {
		return []*upstream{u}
	}
	var out []*upstream
	for _, name := range g.order {
		if u := g.ups[name]; u.capability("resources") {
			out = append(out, u)
		}
	}
	return out
}

// readUpstream reads uri from the upstream that serves it.
func (g *Gateway) readUpstream(ctx context.Context, uri string, params json.RawMessage) (*upstream, json.RawMessage, error) {
	if u, orig, ok := g.resolveURI(uri); ok {
		if u == nil {
			return nil, nil, fmt.Errorf("resources/read %s: no configured server by that name (want %s{server}/{uri}): %w", uri, UpstreamURIPrefix, ErrUnknownResource)
		}
		res, err := u.call(ctx, "resources/read", withURI(params, orig))
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
		res, err := u.call(ctx, "resources/read", params)
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
		return nil, nil, fmt.Errorf("resources/read %s: no server offers resources: %w", uri, ErrUnknownResource)
	}
	return nil, nil, fmt.Errorf("resources/read %s: %w: %w", uri, ErrUnknownResource, errors.Join(errs...))
}

// ReadResource reads an upstream resource for the engine's resourcelink
// layer (engine.ResourceReader). It returns the resources/read result.
func (g *Gateway) ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	u, ok := g.ups[server]
	if !ok {
		return nil, fmt.Errorf("read %s: server %q: %w", uri, server, ErrUnknownResource)
	}
	params, _ := json.Marshal(map[string]string{"uri": uri})
	return u.call(ctx, "resources/read", params)
}

var _ engine.ResourceReader = (*Gateway)(nil)

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
		return c, fmt.Errorf("%w: cursor %q is not one mcpx gave", errBadParams, s)
	}
	return c, nil
}

// listResources serves resources/list and resources/templates/list: one
// upstream's page at a time, then this session's artifacts.
func (s *Session) listResources(ctx context.Context, params json.RawMessage, templates bool) (json.RawMessage, error) {
	g := s.g
	var srcs []*upstream
	for _, name := range g.order {
		if u := g.ups[name]; u.capability("resources") {
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
		res, err := u.call(ctx, method, p)
		if err != nil {
			g.log.Warn("listing an upstream's resources failed; skipping it", "server", u.name, "method", method, "error", err)
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

// artifactPage lists this session's artifacts as mcpx://artifacts/{id}
// resources (or, for templates, the one artifact template).
func (s *Session) artifactPage(ctx context.Context, out []byte, key string, templates bool, cursor string, src int) (json.RawMessage, error) {
	if templates {
		if cursor != "" {
			return out, nil
		}
		t := map[string]any{
			"uriTemplate": engine.URIScheme + "{id}",
			"name":        "mcpx-artifact",
			"title":       "mcpx artifact",
			"description": "Bytes mcpx moved out of a tool result in this session; read by id.",
		}
		b, _ := json.Marshal([]any{t})
		out, _ = sjson.SetRawBytes(out, key, b)
		return out, nil
	}
	refs, next, err := s.listArtifacts(ctx, cursor)
	if err != nil {
		return nil, fmt.Errorf("resources/list: artifacts: %w", err)
	}
	items := make([]map[string]any, 0, len(refs))
	for _, r := range refs {
		s.addArtifact(r.ID)
		name := r.Filename
		if name == "" {
			name = r.ID
		}
		item := map[string]any{
			"uri":         engine.ArtifactURI(r.ID),
			"name":        name,
			"description": fmt.Sprintf("mcpx artifact %s from %s %s (%s)", r.ID, r.Source.Server, r.Source.Tool, engine.HumanBytes(r.SizeBytes)),
			"size":        r.SizeBytes,
		}
		if r.MIMEType != "" {
			item["mimeType"] = r.MIMEType
		}
		items = append(items, item)
	}
	b, _ := json.Marshal(items)
	out, _ = sjson.SetRawBytes(out, key, b)
	if next != "" {
		out, _ = sjson.SetBytes(out, "nextCursor", encodeCursor(pageCursor{Source: src, Cursor: next}))
	}
	return out, nil
}

// artifactID returns the id of an mcpx://artifacts/{id} URI.
func artifactID(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, engine.URIScheme)
	return id, ok && id != "" && !strings.ContainsAny(id, "/?#")
}

// mayRead reports whether the session may read artifact id: it was made
// in this session (or is listed under its scope).
func (s *Session) mayRead(ctx context.Context, id string) bool {
	if s.ownsArtifact(id) {
		return true
	}
	if !s.inScope(ctx, id) {
		return false
	}
	s.addArtifact(id)
	return true
}

// readArtifact returns an artifact's exact bytes as a blob.
func (s *Session) readArtifact(ctx context.Context, uri, id string) (json.RawMessage, error) {
	if !s.mayRead(ctx, id) {
		if ok, _ := s.g.st.Exists(ctx, id); ok {
			return nil, fmt.Errorf("resources/read %s: %w", uri, ErrForbidden)
		}
		return nil, fmt.Errorf("resources/read %s: %w", uri, ErrUnknownResource)
	}
	rc, ref, err := s.g.st.Get(ctx, id, nil)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("resources/read %s: %w: %w", uri, ErrUnknownResource, err)
		}
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	buf.Grow(int(ref.SizeBytes))
	if _, err := io.Copy(&buf, rc); err != nil {
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	mime := ref.MIMEType
	if mime == "" {
		mime = "application/octet-stream"
	}
	enc := make([]byte, base64.StdEncoding.EncodedLen(buf.Len()))
	base64.StdEncoding.Encode(enc, buf.Bytes())
	out := make([]byte, 0, len(enc)+256)
	out = append(out, `{"contents":[{"uri":`...)
	out, _ = appendJSON(out, uri)
	out = append(out, `,"mimeType":`...)
	out, _ = appendJSON(out, mime)
	out = append(out, `,"blob":"`...)
	out = append(out, enc...)
	out = append(out, `","_meta":{"`+ArtifactMetaKey+`":`...)
	refJSON, _ := json.Marshal(s.g.link(engine.RefFromStore(ref)))
	out = append(out, refJSON...)
	out = append(out, "}}]}"...)
	return out, nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	return append(b, j...), err
}

// link sets a ref's download URL when a Linker is configured.
func (g *Gateway) link(r engine.ArtifactRef) engine.ArtifactRef {
	if g.linker != nil && r.URL == "" {
		r.URL = g.linker.ArtifactURL(r)
	}
	return r
}

// readDirect serves a client's resources/read: blob contents are stored
// as artifacts and come back with their bytes and the ref in _meta.
func (s *Session) readDirect(ctx context.Context, uri string, params json.RawMessage) (json.RawMessage, error) {
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
		ref, err := s.storeBlob(ctx, u.name, c, blob.Str)
		if err != nil {
			perr = err
			return false
		}
		ids = append(ids, ref.ID)
		refJSON, _ := json.Marshal(s.g.link(ref))
		out, err = sjson.SetRawBytes(out, "contents."+idx.String()+"._meta."+strings.ReplaceAll(ArtifactMetaKey, "/", `\/`), refJSON)
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

// storeBlob decodes a base64 blob into the store under this session.
func (s *Session) storeBlob(ctx context.Context, server string, c gjson.Result, b64 string) (engine.ArtifactRef, error) {
	uri := c.Get("uri").String()
	r := base64.NewDecoder(base64.StdEncoding, strings.NewReader(b64))
	name := path.Base(uri)
	if name == "." || name == "/" {
		name = ""
	}
	ref, err := s.g.st.Put(ctx, r, store.PutOptions{
		Namespace: server,
		MIMEType:  c.Get("mimeType").String(),
		Filename:  name,
		Scope:     store.Scope{SessionID: s.ID, UserID: s.User},
		Source:    store.Source{Server: server, Tool: "resources/read", Path: uri},
	})
	if err != nil {
		return engine.ArtifactRef{}, fmt.Errorf("store blob of %s: %w", uri, err)
	}
	s.addArtifact(ref.ID)
	return engine.RefFromStore(ref), nil
}

// generated runs a generated resource tool for the model.
func (s *Session) generated(ctx context.Context, r *toolRoute, args json.RawMessage, scope engine.Scope) (json.RawMessage, error) {
	u := r.up
	call := engine.Call{Server: u.name, Tool: r.generated, Arguments: args, Scope: scope}
	switch r.generated {
	case genList, genTemplates:
		method := "resources/list"
		if r.generated == genTemplates {
			method = "resources/templates/list"
		}
		p := json.RawMessage(nil)
		if c := gjson.GetBytes(args, "cursor").String(); c != "" {
			p, _ = json.Marshal(map[string]string{"cursor": c})
		}
		res, err := u.call(ctx, method, p)
		if err != nil {
			return toolError(fmt.Sprintf("%s failed: %v", method, err)), nil
		}
		if method == "resources/list" {
			gjson.GetBytes(res, "resources").ForEach(func(_, v gjson.Result) bool {
				s.g.claim(u, v.Get("uri").String())
				return true
			})
		}
		out := []byte(`{"content":[{"type":"text","text":""}]}`)
		out, _ = sjson.SetBytes(out, "content.0.text", string(res))
		out, _ = sjson.SetRawBytes(out, "structuredContent", res)
		return s.transform(ctx, call, out)
	case genRead:
		uri := gjson.GetBytes(args, "uri").String()
		if uri == "" {
			return toolError(`"uri" is required`), nil
		}
		if id, ok := artifactID(uri); ok {
			return s.artifactSummary(ctx, uri, id)
		}
		if nu, orig, ok := s.g.resolveURI(uri); ok {
			if nu != u {
				return toolError(fmt.Sprintf("%s is not a resource of the %s server", uri, u.name)), nil
			}
			uri = orig
		}
		k := cacheKey{session: s.ID, uri: uri, kind: "tool"}
		if raw, ok := s.g.cached(ctx, k); ok {
			return raw, nil
		}
		params, _ := json.Marshal(map[string]string{"uri": uri})
		res, err := u.call(ctx, "resources/read", params)
		if err != nil {
			return toolError(fmt.Sprintf("resources/read %s failed: %v", uri, err)), nil
		}
		s.g.claim(u, uri)
		out := []byte(`{"content":[]}`)
		gjson.GetBytes(res, "contents").ForEach(func(_, c gjson.Result) bool {
			blk := []byte(`{"type":"resource"}`)
			blk, _ = sjson.SetRawBytes(blk, "resource", []byte(c.Raw))
			out, _ = sjson.SetRawBytes(out, "content.-1", blk)
			return true
		})
		tres, err := s.g.eng.Transform(ctx, call, out)
		if err != nil {
			return nil, fmt.Errorf("transform resource %s: %w", uri, err)
		}
		ids := make([]string, 0, len(tres.Artifacts))
		for _, a := range tres.Artifacts {
			ids = append(ids, a.ID)
			s.addArtifact(a.ID)
		}
		s.g.remember(k, tres.Raw, ids)
		return tres.Raw, nil
	}
	return nil, fmt.Errorf("%w: generated tool %q", ErrUnknownTool, r.generated)
}

// artifactSummary describes one of the session's artifacts to the model
// without its bytes.
func (s *Session) artifactSummary(ctx context.Context, uri, id string) (json.RawMessage, error) {
	if !s.mayRead(ctx, id) {
		return toolError(fmt.Sprintf("%s is not an artifact of this session", uri)), nil
	}
	ref, err := s.g.st.Stat(ctx, id)
	if err != nil {
		return toolError(fmt.Sprintf("%s: %v", uri, err)), nil
	}
	ar := s.g.link(engine.RefFromStore(ref))
	v := map[string]any{
		"artifact": ar,
		"summary":  fmt.Sprintf("Artifact %s (%s, %s) is stored; its bytes are not in this result. Pass %s to a tool argument to hand it over.", id, ar.MIMEType, engine.HumanBytes(ar.SizeBytes), uri),
	}
	text, _ := json.Marshal(v)
	link := map[string]any{"type": "resource_link", "uri": uri, "name": id, "mimeType": ar.MIMEType, "size": ar.SizeBytes}
	return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}, link}})
}

// toolError is a tool result that reports a failure to the model.
func toolError(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": msg}}, "isError": true})
	return b
}

// subscribe records the session's subscription and subscribes upstream
// when it is the first for uri.
func (g *Gateway) subscribe(ctx context.Context, s *Session, uri string) error {
	g.subsMu.Lock()
	set := g.subs[uri]
	if set == nil {
		set = map[*Session]struct{}{}
		g.subs[uri] = set
	}
	if _, dup := set[s]; dup {
		g.subsMu.Unlock()
		return nil
	}
	first := len(set) == 0
	set[s] = struct{}{}
	g.subsMu.Unlock()
	s.mu.Lock()
	s.subs[uri] = struct{}{}
	s.mu.Unlock()
	if _, ok := artifactID(uri); ok || !first {
		return nil // artifacts never change
	}
	_, orig, namespaced := g.resolveURI(uri)
	params, _ := json.Marshal(map[string]string{"uri": orig})
	var errs []error
	for _, u := range g.candidates(uri) {
		if _, err := u.call(ctx, "resources/subscribe", params); err != nil {
			errs = append(errs, err)
			continue
		}
		if !namespaced {
			g.claim(u, uri)
		}
		return nil
	}
	g.unsubscribe(s, uri)
	if len(errs) == 0 {
		return fmt.Errorf("resources/subscribe %s: %w", uri, ErrUnknownResource)
	}
	return fmt.Errorf("resources/subscribe %s: %w", uri, errors.Join(errs...))
}

// unsubscribe drops the session's subscription, and the upstream's when
// it was the last.
func (g *Gateway) unsubscribe(s *Session, uri string) {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
	g.subsMu.Lock()
	set := g.subs[uri]
	_, had := set[s]
	delete(set, s)
	last := had && len(set) == 0
	if len(set) == 0 {
		delete(g.subs, uri)
	}
	g.subsMu.Unlock()
	if _, ok := artifactID(uri); ok || !last {
		return
	}
	u, orig, namespaced := g.resolveURI(uri)
	if !namespaced {
		u = g.ownerOf(uri)
	}
	if u != nil && g.ctx != nil {
		params, _ := json.Marshal(map[string]string{"uri": orig})
		if _, err := u.call(g.ctx, "resources/unsubscribe", params); err != nil {
			u.log.Debug("resources/unsubscribe failed", "uri", uri, "error", err)
		}
	}
}

// Subscribers returns how many sessions subscribe to uri.
func (g *Gateway) Subscribers(uri string) int {
	g.subsMu.Lock()
	defer g.subsMu.Unlock()
	return len(g.subs[uri])
}

// promptRoutes maps exposed prompt names to upstreams, rebuilt on every
// prompts/list.
type promptRoutes struct {
	mu sync.RWMutex
	m  map[string]promptRoute
}

type promptRoute struct {
	up   *upstream
	name string
}

// listPrompts merges every upstream's prompts (all pages) into one list,
// namespaced like tools when there are several upstreams.
func (s *Session) listPrompts(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	g := s.g
	table := map[string]promptRoute{}
	out := []byte(`{"prompts":[]}`)
	for _, name := range g.order {
		u := g.ups[name]
		if !u.capability("prompts") {
			continue
		}
		cursor := ""
		for range maxPages {
			p := json.RawMessage(nil)
			if cursor != "" {
				p, _ = json.Marshal(map[string]string{"cursor": cursor})
			}
			res, err := u.call(ctx, "prompts/list", p)
			if err != nil {
				g.log.Warn("prompts/list failed; skipping the server", "server", name, "error", err)
				break
			}
			gjson.GetBytes(res, "prompts").ForEach(func(_, v gjson.Result) bool {
				pn := v.Get("name").String()
				exposed := pn
				if !g.single {
					exposed = name + "_" + pn
				}
				table[exposed] = promptRoute{up: u, name: pn}
				def, _ := sjson.SetBytes([]byte(v.Raw), "name", exposed)
				out, _ = sjson.SetRawBytes(out, "prompts.-1", def)
				return true
			})
			if cursor = gjson.GetBytes(res, "nextCursor").String(); cursor == "" {
				break
			}
		}
	}
	t := &g.prompts
	t.mu.Lock()
	t.m = table
	t.mu.Unlock()
	return out, nil
}

func (g *Gateway) promptRoute(ctx context.Context, s *Session, name string) (promptRoute, bool) {
	t := &g.prompts
	t.mu.RLock()
	r, ok := t.m[name]
	t.mu.RUnlock()
	if ok {
		return r, true
	}
	if g.single {
		return promptRoute{up: g.ups[g.order[0]], name: name}, true
	}
	if _, err := s.listPrompts(ctx, nil); err != nil {
		return promptRoute{}, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r, ok = t.m[name]
	return r, ok
}

func (s *Session) getPrompt(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	name := gjson.GetBytes(params, "name").String()
	r, ok := s.g.promptRoute(ctx, s, name)
	if !ok {
		return nil, fmt.Errorf("prompts/get %q: %w: unknown prompt", name, errBadParams)
	}
	p, _ := sjson.SetBytes(append([]byte(nil), params...), "name", r.name)
	return r.up.call(ctx, "prompts/get", p)
}

func (s *Session) complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	ref := gjson.GetBytes(params, "ref")
	switch ref.Get("type").String() {
	case "ref/prompt":
		r, ok := s.g.promptRoute(ctx, s, ref.Get("name").String())
		if !ok {
			return nil, fmt.Errorf("completion/complete: %w: unknown prompt", errBadParams)
		}
		p, _ := sjson.SetBytes(append([]byte(nil), params...), "ref.name", r.name)
		return r.up.call(ctx, "completion/complete", p)
	case "ref/resource":
		uri := ref.Get("uri").String()
		if _, orig, ok := s.g.resolveURI(uri); ok {
			params, _ = sjson.SetBytes(append([]byte(nil), params...), "ref.uri", orig)
		}
		for _, u := range s.g.candidates(uri) {
			if u.capability("completions") {
				return u.call(ctx, "completion/complete", params)
			}
		}
	}
	return json.RawMessage(`{"completion":{"values":[]}}`), nil
}
