package artifacts

// Artifacts as MCP resources: mcpx://artifacts/{id} listed, read and
// summarised for the session (or principal) that may read them.

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
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

// MetaKey is the _meta key under which a resources/read content carries
// the ref of the artifact its blob was stored as.
const MetaKey = "mcpx/artifact"

// Page lists one page of the artifacts rd may read as
// mcpx://artifacts/{id} resources (or, for templates, the one artifact
// template): the page's items (nil: none to add) and the store's cursor
// of the next page ("" when it is the last).
func (s *Service) Page(ctx context.Context, rd Reader, templates bool, cursor string) (json.RawMessage, string, error) {
	if templates {
		if cursor != "" {
			return nil, "", nil
		}
		t := map[string]any{
			"uriTemplate": engine.URIScheme + "{id}",
			"name":        "mcpx-artifact",
			"title":       "mcpx artifact",
			"description": "Bytes mcpx moved out of a tool result for this client (its session, or any session of its authenticated principal), read by id",
		}
		b, _ := json.Marshal([]any{t})
		return b, "", nil
	}
	refs, next, err := s.list(ctx, rd, cursor)
	if err != nil {
		return nil, "", fmt.Errorf("resources/list: artifacts: %w", err)
	}
	items := make([]map[string]any, 0, len(refs))
	for _, r := range refs {
		rd.Shown.Add(r.ID)
		name := r.Filename
		if name == "" {
			name = r.ID
		}
		item := map[string]any{
			"uri":         engine.URIScheme + r.ID,
			"name":        name,
			"description": fmt.Sprintf("mcpx artifact %s from %s %s (%s)", r.ID, r.Source.Server, r.Source.Tool, humanize.Bytes(r.SizeBytes)),
			"size":        r.SizeBytes,
		}
		if r.MIMEType != "" {
			item["mimeType"] = r.MIMEType
		}
		items = append(items, item)
	}
	b, _ := json.Marshal(items)
	return b, next, nil
}

// ID returns the id of an mcpx://artifacts/{id} URI.
func ID(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, engine.URIScheme)
	return id, ok && id != "" && !strings.ContainsAny(id, "/?#")
}

// Read serves resources/read of artifact id (whose URI is uri) for rd:
// its exact bytes, a text artifact (see textMIME) that is valid UTF-8 as
// "text", up to ArtifactToolsOptions.MaxResourceTextBytes (past it the
// first bytes, cut at a line end, and _meta "mcpx/cut" saying how to
// read the rest); anything else as a base64 "blob".
func (s *Service) Read(ctx context.Context, rd Reader, uri, id string) (json.RawMessage, error) {
	// The caller's own scope of it, for the ref in _meta and its signed
	// link. Another principal's artifact reads as unknown: whether an id
	// exists is not for this client to learn.
	ref, ok, err := s.holding(ctx, rd, id)
	if err != nil {
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	if !ok {
		return nil, fmt.Errorf("resources/read %s: %w", uri, jsonrpc.ErrUnknownResource)
	}
	rd.Shown.Add(id)
	limit := s.o.MaxResourceTextBytes
	text := textMIME(ref.MIMEType)
	var rng *store.Range
	if text && ref.SizeBytes > limit {
		rng = &store.Range{Offset: 0, Length: limit}
	}
	rc, _, err := s.st.Get(ctx, id, rng)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("resources/read %s: %w: %w", uri, jsonrpc.ErrUnknownResource, err)
		}
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	buf.Grow(int(min(ref.SizeBytes, limit+1)))
	if _, err := io.Copy(&buf, rc); err != nil {
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	mime := ref.MIMEType
	if mime == "" {
		mime = "application/octet-stream"
	}
	data := buf.Bytes()
	cut := ""
	if rng != nil {
		data = cutText(data)
		cut = fmt.Sprintf("the first %d of %d bytes (over the %d-byte text limit of resources/read): read the rest with the %s tool (\"id\": %q, \"bytes\": \"%d-%d\", or lines or grep), or download it from the ref's url", len(data), ref.SizeBytes, limit, s.o.QueryName, id, len(data), ref.SizeBytes)
	}
	text = text && utf8.Valid(data)
	refJSON, _ := json.Marshal(s.Link(engine.RefFromStore(ref)))
	out := make([]byte, 0, len(data)*4/3+512)
	out = append(out, `{"contents":[{"uri":`...)
	out, _ = appendJSON(out, uri)
	out = append(out, `,"mimeType":`...)
	out, _ = appendJSON(out, mime)
	if text {
		out = append(out, `,"text":`...)
		out, _ = appendJSON(out, string(data))
	} else {
		if rng != nil {
			// not UTF-8 after all: the whole bytes, as a blob
			return s.readBlob(ctx, uri, ref)
		}
		enc := make([]byte, base64.StdEncoding.EncodedLen(len(data)))
		base64.StdEncoding.Encode(enc, data)
		out = append(out, `,"blob":"`...)
		out = append(out, enc...)
		out = append(out, '"')
	}
	out = append(out, `,"_meta":{"`+MetaKey+`":`...)
	out = append(out, refJSON...)
	if cut != "" {
		out = append(out, `,"mcpx/cut":`...)
		out, _ = appendJSON(out, cut)
	}
	out = append(out, "}}]}"...)
	return out, nil
}

// readBlob returns the bytes of the artifact ref (as the caller holds
// it) as a base64 blob, whatever their type.
func (s *Service) readBlob(ctx context.Context, uri string, ref store.Ref) (json.RawMessage, error) {
	rc, _, err := s.st.Get(ctx, ref.ID, nil)
	if err != nil {
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, rc); err != nil {
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	refJSON, _ := json.Marshal(s.Link(engine.RefFromStore(ref)))
	return json.Marshal(map[string]any{"contents": []any{map[string]any{
		"uri": uri, "mimeType": ref.MIMEType, "blob": base64.StdEncoding.EncodeToString(buf.Bytes()),
		"_meta": map[string]json.RawMessage{MetaKey: refJSON},
	}}})
}

// textMIME reports whether an artifact of this MIME type reads as text:
// text/*, JSON, XML, YAML, JavaScript and their +json/+xml/+yaml kinds.
func textMIME(mime string) bool {
	m, _, _ := strings.Cut(strings.ToLower(mime), ";")
	m = strings.TrimSpace(m)
	switch {
	case strings.HasPrefix(m, "text/"):
		return true
	case strings.HasSuffix(m, "+json"), strings.HasSuffix(m, "+xml"), strings.HasSuffix(m, "+yaml"):
		return true
	}
	switch m {
	case "application/json", "application/x-ndjson", "application/jsonl", "application/xml", "application/yaml", "application/x-yaml", "application/javascript", "application/toml":
		return true
	}
	return false
}

// cutText returns data cut at its last line end, else at its last whole
// UTF-8 character.
func cutText(data []byte) []byte {
	if i := bytes.LastIndexByte(data, '\n'); i >= len(data)/2 {
		return data[:i+1]
	}
	for i := len(data); i > 0 && i > len(data)-utf8.UTFMax; i-- {
		if utf8.Valid(data[:i]) {
			return data[:i]
		}
	}
	return data
}

func appendJSON(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	return append(b, j...), err
}

// StoreBlob decodes the base64 blob of server's resource content c into
// the store for rd.
func (s *Service) StoreBlob(ctx context.Context, rd Reader, server string, c gjson.Result, b64 string) (engine.ArtifactRef, error) {
	uri := c.Get("uri").String()
	r := base64.NewDecoder(base64.StdEncoding, strings.NewReader(b64))
	name := path.Base(uri)
	if name == "." || name == "/" {
		name = ""
	}
	o := store.PutOptions{
		Namespace: server,
		MIMEType:  c.Get("mimeType").String(),
		Filename:  name,
		Scope:     rd.putScope(),
		Source:    store.Source{Server: server, Tool: "resources/read", Path: uri},
	}
	ref, err := s.st.Put(ctx, r, o)
	if err != nil {
		return engine.ArtifactRef{}, fmt.Errorf("store blob of %s: %w", uri, err)
	}
	// Bytes stored before keep their id; this read names them its way.
	if name != "" {
		ref.Filename = name
	}
	ref.Source = o.Source
	rd.Shown.Add(ref.ID)
	return engine.RefFromStore(ref), nil
}

// Summary describes an artifact rd may read to the model without its
// bytes.
func (s *Service) Summary(ctx context.Context, rd Reader, uri, id string) (json.RawMessage, error) {
	// The caller's own scope of it, and a link signed for its session:
	// never those of whoever put the bytes first.
	ref, ok, err := s.holding(ctx, rd, id)
	if err != nil {
		return ToolError(fmt.Sprintf("cannot read %s because %v", uri, err)), nil
	}
	if !ok {
		return ToolError(fmt.Sprintf("%s is not an artifact this client may read", uri)), nil
	}
	rd.Shown.Add(id)
	ar := s.Link(engine.RefFromStore(ref))
	v := map[string]any{
		"artifact": ar,
		"summary":  fmt.Sprintf("Artifact %s (%s, %s) is stored and its bytes are not in this result: pass its URI %s to a tool argument to hand it over", id, ar.MIMEType, humanize.Bytes(ar.SizeBytes), uri),
	}
	text, _ := json.Marshal(v)
	link := map[string]any{"type": "resource_link", "uri": uri, "name": id, "mimeType": ar.MIMEType, "size": ar.SizeBytes}
	return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}, link}})
}
