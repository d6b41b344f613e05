package engine

// What the engine adds to a result besides the layers' rewrites, and the
// layout of a stored content block (what the model reads in its place):
// the references to originals that replace and drop stored, the full
// references of stored blocks, what the rewrite kept out, the note about
// values left inline past MaxArtifactsPerResult, and the stand-in for a
// result too deep to transform.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store"
)

// maxStoredListed bounds the references listed; the rest are counted.
const maxStoredListed = 50

// maxBlockRefsListed bounds the full refs of stored blocks listed in
// _meta (about 400 bytes each, added after the guardrail's cut); the rest
// are counted, and each is still named by its text and resource_link.
const maxBlockRefsListed = 10

// The keys the engine adds to a result's _meta.
const (
	// MetaArtifactsKey lists the full reference of every content block
	// stored in block form, whose model-visible text is the summary only,
	// and of every value replaced in place by a compact ref (see
	// modelRef): [{"path": "content.1", "artifact": ArtifactRef, "view":
	// {...}}] ("view" describes the downscaled image a client that takes
	// images got). A value inside a text block's JSON has "path":
	// "content.N.text" and "json_path", its path in that JSON; a value in
	// structuredContent has "path": "structuredContent.a.b". The schema
	// fallback adds its placeholders' refs here too.
	MetaArtifactsKey = "mcpx/artifacts"
	// MetaKeptOutKey says what the rewrite kept out of the model's
	// context: {"bytes": N, "tokens": M, "artifacts": K}. Bytes and
	// tokens compare the result as it came with the result as it leaves,
	// less what the engine adds to _meta for hosts (MetaStoredKey,
	// MetaArtifactsKey and this member), which the model does not read;
	// tokens are EstimateTokens', except that for a client that takes
	// images (View.Images) an image block counts what a vision model
	// bills for its pixels (imageTokens), both the original the model
	// would have been sent and the copy it is sent; for any other client
	// base64 counts as text, as a client that passes it as text pays. Set
	// on MCP results that stored something.
	MetaKeptOutKey = "mcpx/kept_out"
)

// notes are what the engine adds to a result besides the layers' rewrites.
type notes struct {
	stored []storedOriginal
	views  []blockRef
	capped int
}

// blockRef is a content block stored in block form, or a value replaced
// in place: its full reference, for hosts, in _meta[MetaArtifactsKey].
type blockRef struct {
	Path string `json:"path"`
	// JSONPath is the value's path in the JSON a text block holds.
	JSONPath string      `json:"json_path,omitempty"`
	Artifact ArtifactRef `json:"artifact"`
	View     *shownImage `json:"view,omitempty"`
	// NoView says why a client that takes images got no view of an
	// image: the model reads the same sentence.
	NoView string `json:"no_view,omitempty"`
	// sent is the image block a client that takes images would have been
	// sent natively in its place, for what the result kept out.
	sent *sentImage
	// payloadPath is an in-place value's path in its payload: the same
	// value in another carrier is listed once.
	payloadPath string
}

// inPlace lists the full ref of a value replaced in place, named by where
// it is in the result; the model reads the compact ref (modelRef).
func (x *executor) inPlace(t *target, ref ArtifactRef) {
	br := blockRef{Path: t.path, Artifact: ref}
	if b := x.bufs[t.buf]; b.carrier >= 0 {
		br.payloadPath = t.path
		switch c := x.d.Carriers()[b.carrier]; c.Kind {
		case layer.CarrierStructured:
			br.Path = joinPath(string(layer.CarrierStructured), t.path)
		case layer.CarrierText:
			br.Path, br.JSONPath = fmt.Sprintf("content.%d.text", c.Block), t.path
		}
	}
	for i, v := range x.out.views {
		if v.payloadPath != "" && v.payloadPath == br.payloadPath && v.Artifact.ID == ref.ID {
			// The same value in another carrier: named once, in
			// structuredContent when it is there too.
			if br.JSONPath == "" {
				x.out.views[i].Path, x.out.views[i].JSONPath = br.Path, ""
			}
			return
		}
	}
	x.out.views = append(x.out.views, br)
}

// joinPath joins two gjson paths; either may be empty.
func joinPath(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "." + b
}

// sentImage is an image block as the upstream sent it to a client that
// takes images: its size in pixels (zero when its bytes did not say) and
// the base64 characters that carried it.
type sentImage struct {
	width, height, b64Len int
}

// shownImage is the downscaled copy of an image sent natively.
type shownImage struct {
	MIMEType  string `json:"mime_type"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	SizeBytes int    `json:"size_bytes"`
	// OriginalWidth and OriginalHeight are the stored image's.
	OriginalWidth  int `json:"original_width"`
	OriginalHeight int `json:"original_height"`
	b64Len         int // the base64 characters sent
}

// annotate returns d's bytes with the references to stored originals, the
// full references of stored blocks and values replaced in place, and the
// cap note added. A non-MCP document that is not an object has no place
// for them: its refs are in Result.Artifacts only.
func (e *Engine) annotate(d *layer.Doc, n notes) []byte {
	if len(n.stored) == 0 && n.capped == 0 && len(n.views) == 0 {
		return d.Raw
	}
	raw := d.Raw
	root := skipWS(raw, 0)
	if root >= len(raw) || raw[root] != '{' {
		e.log.Warn("result is not an object: references to stored originals are in the artifact list only", "server", d.Call.Server, "tool", d.Call.Tool, "stored", len(n.stored))
		return raw
	}
	var list []byte
	if len(n.stored) > 0 {
		shown := n.stored
		if len(shown) > maxStoredListed {
			shown = shown[:maxStoredListed]
		}
		list, _ = json.Marshal(shown)
		if more := len(n.stored) - len(shown); more > 0 {
			list = fmt.Appendf(list[:len(list)-1], `,{"more":%d}]`, more)
		}
	}
	note := ""
	if n.capped > 0 {
		note = fmt.Sprintf("[mcpx: this result reached its limit of %d artifacts; %d more values were left in place (the size guardrail may have cut them, storing what it cut)]", e.cfg.MaxArtifactsPerResult, n.capped)
	}
	var eds []jsonwalk.Edit
	if !d.IsMCP() {
		if list == nil && note == "" {
			return raw
		}
		v := []byte(`{`)
		if list != nil {
			v = append(v, `"stored":`...)
			v = append(append(v, list...), ',')
		}
		if note != "" {
			v = append(v, `"note":`...)
			v = append(jsonstr.AppendString(v, note), ',')
		}
		v[len(v)-1] = '}'
		if next, err := createPath(raw, jsonwalk.KeyPath(freeKey(raw, root, "_mcpx")), v); err == nil {
			return next
		}
		return raw
	}
	var members []member
	if list != nil {
		members = append(members, member{MetaStoredKey, list})
	}
	if len(n.views) > 0 {
		shown := n.views
		if len(shown) > maxBlockRefsListed {
			shown = shown[:maxBlockRefsListed]
		}
		v, _ := json.Marshal(shown)
		if more := len(n.views) - len(shown); more > 0 {
			v = fmt.Appendf(v[:len(v)-1], `,{"more":%d}]`, more)
		}
		members = append(members, member{MetaArtifactsKey, v})
	}
	if len(members) > 0 {
		eds = append(eds, e.metaInsert(raw, root, members)...)
	}
	if note != "" {
		block := jsonstr.AppendString([]byte(`{"type":"text","text":`), note)
		block = append(block, '}')
		if content, ok := jsonwalk.Member(raw, root, "content"); ok && content.Kind == jsonwalk.KindArray {
			co, closeAt := content.Off, content.End-1
			with := block
			if len(children(raw, co)) > 0 {
				with = append([]byte{','}, block...)
			}
			eds = append(eds, jsonwalk.Edit{Off: closeAt, With: with})
		}
	}
	out, err := jsonwalk.Splice(raw, eds)
	if err != nil {
		e.log.Warn("cannot annotate the result", "error", err)
		return raw
	}
	return out
}

// member is a member the engine adds to a result's _meta.
type member struct {
	key string
	val []byte
}

// metaInsert adds members to the _meta of the object at raw[root],
// creating it, under a free key each (never overwriting the upstream's).
// A _meta that is not an object is left alone.
func (e *Engine) metaInsert(raw []byte, root int, members []member) []jsonwalk.Edit {
	meta, ok := jsonwalk.Member(raw, root, "_meta")
	if ok && meta.Kind != jsonwalk.KindObject {
		return nil
	}
	if ok {
		mo := meta.Off
		var ins []byte
		for _, m := range members {
			ins = jsonstr.AppendString(ins, freeKey(raw, mo, m.key))
			ins = append(append(append(ins, ':'), m.val...), ',')
		}
		if len(children(raw, mo)) == 0 {
			ins = ins[:len(ins)-1]
		}
		return []jsonwalk.Edit{{Off: mo + 1, With: ins}}
	}
	ins := []byte(`,"_meta":{`)
	for _, m := range members {
		ins = jsonstr.AppendString(ins, m.key)
		ins = append(append(append(ins, ':'), m.val...), ',')
	}
	ins[len(ins)-1] = '}'
	return e.rootInsert(raw, root, ins)
}

// addKeptOut adds _meta[MetaKeptOutKey] to an MCP result that stored
// something and came out smaller: what the result as it came (in) costs
// against what it costs as it leaves, less the refs in _meta for hosts.
func (e *Engine) addKeptOut(d *layer.Doc, in []byte, tokensIn func() int, res *Result, views []blockRef) []byte {
	out := res.Raw
	if len(res.Artifacts) == 0 || !d.IsMCP() {
		return out
	}
	root := skipWS(out, 0)
	if root >= len(out) || out[root] != '{' {
		return out
	}
	hostMeta := hostOnlyMeta(out, root)
	if len(out)-hostMeta.bytes >= len(in) {
		return out
	}
	tokIn, tokOut := tokensIn(), EstimateTokens(out)-hostMeta.tokens
	for _, v := range views {
		// A native image is not read as text: it costs its pixels.
		if v.View != nil {
			tokOut += imageTokens(v.View.Width, v.View.Height) - (v.View.b64Len*2+2)/3
		}
		if s := v.sent; s != nil && s.width > 0 && s.height > 0 {
			tokIn += imageTokens(s.width, s.height) - (s.b64Len*2+2)/3
		}
	}
	res.KeptOutBytes, res.KeptOutTokens = len(in)-len(out)+hostMeta.bytes, max(tokIn-tokOut, 0)
	val := fmt.Appendf(nil, `{"bytes":%d,"tokens":%d,"artifacts":%d}`, res.KeptOutBytes, res.KeptOutTokens, len(res.Artifacts))
	next, err := jsonwalk.Splice(out, e.metaInsert(out, root, []member{{MetaKeptOutKey, val}}))
	if err != nil {
		e.log.Warn("cannot note what the result kept out", "error", err)
		return out
	}
	return next
}

// metaCost is what some of a result's bytes cost.
type metaCost struct{ bytes, tokens int }

// hostOnlyMeta is what the refs the engine lists in the _meta of the
// object at out[root] for hosts cost (MetaStoredKey, MetaArtifactsKey,
// under any suffix freeKey gave them): the model does not read them.
func hostOnlyMeta(out []byte, root int) metaCost {
	var c metaCost
	meta, ok := jsonwalk.Member(out, root, "_meta")
	if !ok || meta.Kind != jsonwalk.KindObject {
		return c
	}
	for _, m := range children(out, meta.Off) {
		mem := out[m.start:m.end]
		if bytes.HasPrefix(mem, []byte(`"`+MetaArtifactsKey)) || bytes.HasPrefix(mem, []byte(`"`+MetaStoredKey)) {
			c.bytes += len(mem) + 1 // and its comma
			c.tokens += EstimateTokens(mem)
		}
	}
	return c
}

// blockView is what replaces a content block stored in block form: for a
// client that takes images (View.Images), a downscaled image block first
// (or, when none could be made, a sentence in the text saying why); then a
// text block with the summary only, which names the artifact's id and URI
// (the full ref is in _meta[MetaArtifactsKey], for hosts); then a
// resource_link to the artifact, described by desc. The block's
// annotations are kept on each block the model reads. Only the stored
// value leaves the result: the block's other members (its _meta, any the
// MCP schema does not name) stay on the text block, and an embedded
// resource's on the resource_link (see keepMembers).
func (x *executor) blockView(ctx context.Context, t *target, bv blockValue, rep replacement, desc string) []byte {
	raw := x.bufs[t.buf].raw
	ref := rep.Artifact
	br := blockRef{Path: t.path, Artifact: ref}
	var img *imageview.Image
	if v := x.d.Call.View; v.Images && bv.typ == "image" && bv.val.Kind == jsonwalk.KindString {
		br.sent = &sentImage{b64Len: bv.val.End - bv.val.Off - 2}
		br.sent.width, br.sent.height = contentSize(ref.Content)
		var err error
		img, err = downscale(ctx, x.e.mem, raw[bv.val.Off+1:bv.val.End-1], v.ImageView)
		if err != nil {
			img, br.NoView = nil, x.e.noViewReason(err, v.ImageView)
			if errors.Is(err, membudget.ErrBusy) || errors.Is(err, membudget.ErrTooLarge) {
				x.e.workRefused(x.d.Call, x.step, t.path, "image view", err)
			} else {
				x.e.log.Debug("image sent as a reference only", "server", x.d.Call.Server, "tool", x.d.Call.Tool, "path", t.path, "error", err)
			}
		}
	}
	block := x.siblings(t.buf, t.off) // cached: the block may hold megabytes
	ann, hasAnn := block.Get("annotations")
	var out []byte
	if img != nil {
		out = append(out, `{"type":"image","data":"`...)
		n := len(out)
		if br.sent != nil && br.sent.width == 0 {
			br.sent.width, br.sent.height = img.OrigWidth, img.OrigHeight
		}
		out = base64.StdEncoding.AppendEncode(out, img.Data)
		br.View = &shownImage{MIMEType: img.MIMEType, Width: img.Width, Height: img.Height, SizeBytes: len(img.Data), OriginalWidth: img.OrigWidth, OriginalHeight: img.OrigHeight, b64Len: len(out) - n}
		out = append(out, `","mimeType":`...)
		out = jsonstr.AppendString(out, img.MIMEType)
		if hasAnn {
			out = append(append(out, `,"annotations":`...), raw[ann.Off:ann.End]...)
		}
		out = append(out, `},`...)
	}
	x.out.views = append(x.out.views, br)
	out = append(out, `{"type":"text","text":`...)
	out = jsonstr.AppendString(out, modelText(rep, br.View, br.NoView))
	if hasAnn {
		out = append(append(out, `,"annotations":`...), raw[ann.Off:ann.End]...)
	}
	// What the text and the link carry already: the block's type, its
	// annotations, the stored value, the resource object (whose uri the
	// summary names), and a mimeType the artifact has too.
	carried := []int{bv.val.Off, bv.obj}
	if typ, ok := block.Get("type"); ok {
		carried = append(carried, typ.Off)
	}
	if hasAnn {
		carried = append(carried, ann.Off)
	}
	inner := block
	if bv.obj != t.off {
		inner = x.siblings(t.buf, bv.obj)
		if uri, ok := inner.Get("uri"); ok && uri.Kind == jsonwalk.KindString {
			carried = append(carried, uri.Off)
		}
	}
	// The link says the block's own media type, parameters and all
	// ("text/plain; charset=utf-8"), when the artifact's is that type.
	linkMIME := ref.MIMEType
	if mt, ok := inner.Get("mimeType"); ok && mt.Kind == jsonwalk.KindString {
		if s, err := jsonwalk.UnescapeString(raw[mt.Off+1 : mt.End-1]); err == nil && sameMediaType(s, ref.MIMEType) {
			carried, linkMIME = append(carried, mt.Off), s
		}
	}
	out = keepMembers(out, raw, block, carried, "type", "text", "annotations")
	out = append(out, `},{"type":"resource_link","uri":`...)
	out = jsonstr.AppendString(out, ref.URI)
	out = append(out, `,"name":`...)
	out = jsonstr.AppendString(out, nonEmpty(ref.Filename, ref.ID))
	out = append(out, `,"description":`...)
	out = jsonstr.AppendString(out, desc)
	if linkMIME != "" {
		out = append(out, `,"mimeType":`...)
		out = jsonstr.AppendString(out, linkMIME)
	}
	out = fmt.Appendf(append(out, `,"size":`...), "%d", ref.SizeBytes)
	if bv.obj != t.off {
		out = keepMembers(out, raw, inner, carried, "type", "uri", "name", "description", "mimeType", "size")
	}
	return append(out, '}')
}

// sameMediaType reports whether a and b name one media type, whatever
// their parameters: "text/plain; charset=utf-8" and "text/plain".
func sameMediaType(a, b string) bool {
	base := func(s string) string { t, _, _ := strings.Cut(s, ";"); return strings.TrimSpace(t) }
	return b != "" && strings.EqualFold(base(a), base(b))
}

// keepMembers appends to out, as ",name:value", the members of obj (in
// raw) whose values do not start at one of the offsets in carried: what a
// replacement of obj does not say itself, kept byte for byte. A member
// named as one the replacement writes (taken), or as one kept before it
// (a duplicate key), keeps its value under a free name: "text.2".
func keepMembers(out, raw []byte, obj jsonwalk.Object, carried []int, taken ...string) []byte {
	used := map[string]bool{}
	for _, k := range taken {
		used[k] = true
	}
	for _, f := range obj {
		if slices.Contains(carried, f.Off) {
			continue
		}
		k := f.Key
		for n := 2; used[k]; n++ {
			k = fmt.Sprintf("%s.%d", f.Key, n)
		}
		used[k] = true
		out = append(jsonstr.AppendString(append(out, ','), k), ':')
		out = append(out, raw[f.Off:f.End]...)
	}
	return out
}

// modelText is the text the model reads for a stored block: the summary,
// which names the artifact (its URI added when a template left it out),
// what the image above it is or why no image came (noView), and a preview
// when the rewrite kept one.
func modelText(rep replacement, shown *shownImage, noView string) string {
	ref := rep.Artifact
	text := rep.Summary
	if !ref.Truncated && ref.NotStored == nil && !strings.Contains(text, ref.URI) {
		text += " (artifact " + ref.URI + ")"
	}
	if shown != nil {
		text += fmt.Sprintf("\nThe image above is a %dx%d copy (%s, %s) of the %dx%d original.", shown.Width, shown.Height, strings.TrimPrefix(shown.MIMEType, "image/"), humanize.Bytes(int64(shown.SizeBytes)), shown.OriginalWidth, shown.OriginalHeight)
	}
	if noView != "" {
		text += "\nNo image view: " + noView + "."
	}
	if rep.Preview != "" {
		text += "\nPreview: " + rep.Preview
	}
	return text
}

// rootInsert inserts a ",member" (ins starts with a comma) before the root
// object's closing brace.
func (e *Engine) rootInsert(raw []byte, root int, ins []byte) []jsonwalk.Edit {
	kids := children(raw, root)
	if len(kids) == 0 {
		ins = ins[1:]
		return []jsonwalk.Edit{{Off: skipWS(raw, root+1), With: ins}}
	}
	return []jsonwalk.Edit{{Off: kids[len(kids)-1].end, With: ins}}
}

// freeKey returns key, or key with a suffix when the object at raw[obj]
// already has it: never overwrite what the upstream sent.
func freeKey(raw []byte, obj int, key string) string {
	k := key
	for n := 2; ; n++ {
		if _, ok := jsonwalk.Member(raw, obj, k); !ok {
			return k
		}
		k = fmt.Sprintf("%s.%d", key, n)
	}
}

// tooDeep stores a result nested past MaxDepth whole and returns a result
// that names it: no layer can walk it in linear time, and passing it on
// would flood the model. When the store fails the result passes through.
func (e *Engine) tooDeep(ctx context.Context, c Call, raw []byte, cause error) (*Result, error) {
	res := &Result{Raw: raw}
	fail := func(err error) {
		res.Failures = append(res.Failures, &LayerError{Step: "engine", Err: err})
		e.log.Warn("result not transformed", "server", c.Server, "tool", c.Tool, "error", err)
		e.emit(Event{Type: EventLayerFailed, Server: c.Server, Tool: c.Tool, Scope: c.Scope, Layer: "engine", Error: err.Error()})
	}
	opts := store.PutOptions{
		Namespace: c.Server, MIMEType: "application/json",
		Filename: defaultFilename(c.Tool, "result", ".json"), Scope: c.Scope,
		Source:   store.Source{Server: c.Server, Tool: c.Tool, Layer: "engine"},
		MaxBytes: e.cfg.MaxArtifactBytes,
	}
	sref, err := e.store.Put(ctx, strings.NewReader(string(raw)), opts)
	if err != nil {
		fail(fmt.Errorf("%w; storing it failed, passed through: %w", cause, err))
		return res, nil
	}
	fail(cause)
	ref := RefFromStore(asPut(sref, opts))
	ref.Content, _ = e.inspectStored(ctx, c, "engine", "", sref)
	if e.linker != nil && !ref.Truncated {
		ref.URL = e.linker.ArtifactURL(ref)
	}
	res.Artifacts = []ArtifactRef{ref}
	e.emit(Event{Type: EventArtifactStored, Server: c.Server, Tool: c.Tool, Scope: c.Scope, Layer: "engine", Artifact: &ref, AlreadyStored: sref.AlreadyStored})
	rep := replacement{Artifact: ref, Summary: fmt.Sprintf("The result nests deeper than %d levels, past what mcpx transforms: the whole result (%s) is stored as artifact %s at %s", e.cfg.MaxDepth, humanize.Bytes(ref.SizeBytes), ref.ID, ref.URI)}
	mcp, isError := topLevelMCP(raw)
	if !mcp {
		res.Raw = rep.marshal()
		return res, nil
	}
	out := jsonstr.AppendString([]byte(`{"content":[{"type":"text","text":`), string(rep.marshal()))
	out = append(out, `},{"type":"resource_link","uri":`...)
	out = jsonstr.AppendString(out, ref.URI)
	out = append(out, `,"name":`...)
	out = jsonstr.AppendString(out, nonEmpty(ref.Filename, ref.ID))
	out = append(out, `,"mimeType":"application/json"}]`...)
	if isError {
		out = append(out, `,"isError":true`...)
	}
	// The model reads the compact ref; hosts get the full one.
	full, _ := json.Marshal([]blockRef{{Path: "content.0.text", Artifact: ref}})
	out = append(out, `,"_meta":{"`+MetaArtifactsKey+`":`...)
	out = append(out, full...)
	res.Raw = append(out, "}}"...)
	return res, nil
}

// topLevelMCP reads the top-level members of raw without descending (a
// linear scan at any depth): an MCP result has content or
// structuredContent; isError is copied.
func topLevelMCP(raw []byte) (mcp, isError bool) {
	_ = jsonwalk.WalkValidated(raw, func(v *jsonwalk.Visit) jsonwalk.Step {
		switch {
		case len(v.Path) == 0:
			if v.Kind != jsonwalk.KindObject || v.Leave {
				return jsonwalk.Stop
			}
			return jsonwalk.Descend
		case v.Leave:
			return jsonwalk.Descend
		case v.Path[0].KeyIs("content") || v.Path[0].KeyIs("structuredContent"):
			mcp = true
		case v.Path[0].KeyIs("isError"):
			isError = v.Kind == jsonwalk.KindLiteral && raw[v.Off] == 't'
		}
		return jsonwalk.SkipValue
	})
	return mcp, isError
}
