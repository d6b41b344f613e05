package engine

// Storing values: what ActionArtifact and ActionTruncate do to one value.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/internal/magic"
	"github.com/mcpx-dev/mcpx/store"
)

// artifact stores the value and returns its replacement.
func (x *executor) artifact(ctx context.Context, t *target) ([]byte, error) {
	rw := &x.rws[t.rw]
	val := x.bufs[t.buf].raw[t.off:t.end]
	ref, vars, err := x.put(ctx, t, val, encodingFor(rw.Encoding, t.kind), rw.MIME, rw.Filename)
	if err != nil {
		return nil, err
	}
	rep := replacement{Artifact: ref, Summary: x.summary(rw, vars)}
	if rw.Keep > 0 && t.kind == jsonwalk.KindString && vars.Kind == "Text" {
		rep.Preview = prefixRunes(val[1:len(val)-1], rw.Keep)
	}
	if ref.NotStored != nil && rep.Preview == "" && t.kind == jsonwalk.KindString && vars.Kind == "Text" {
		rep.Preview = prefixRunes(val[1:len(val)-1], refusedPreviewRunes)
	}
	x.inPlace(t, ref)
	if rw.Form == layer.FormText {
		return jsonstr.Append(nil, rep.marshal()), nil
	}
	return rep.marshal(), nil
}

// summary is a stored value's summary: the rewrite's template, with what
// the engine knows that it leaves out (layerSummary), or the default.
func (x *executor) summary(rw *layer.Rewrite, v templateVars) string {
	if rw.Summary != "" {
		return layerSummary(rw.Summary, v)
	}
	return defaultSummary(v)
}

// ownWords is a truncation marker ("[truncated: …]") with a rewrite's
// summary template rendered first: the layer's words, then the engine's
// count of what was kept and where the rest is.
func ownWords(tmpl string, v templateVars, marker string) string {
	own := strings.TrimSpace(render(tmpl, v))
	if own == "" {
		return marker
	}
	return "[" + own + " — " + strings.TrimPrefix(marker, "[")
}

// put streams a value into the store and returns its ref and the
// variables of its summary template.
func (x *executor) put(ctx context.Context, t *target, val []byte, enc layer.Encoding, mimeType, filenameTmpl string) (ArtifactRef, templateVars, error) {
	vars := templateVars{Server: x.d.Call.Server, Tool: x.d.Call.Tool, Path: t.path, Lookup: x.lookup(t), Tools: x.e.tools, Images: x.d.Call.View.Images}
	key := fmt.Sprintf("%d\x00%s\x00%s\x00%d", t.rw, t.path, enc, len(val))
	if prev, ok := x.done[key]; ok && bytes.Equal(prev.val, val) {
		vars.Ref = prev.ref
		vars.Kind = kindOf(prev.ref.MIMEType, enc)
		vars.Content = prev.content
		return prev.ref, vars, nil
	}
	src, err := x.source(t, val, enc, mimeType)
	if err != nil {
		return ArtifactRef{}, vars, err
	}
	if src.instead != "" {
		ref, vars, err := x.put(ctx, t, val, src.instead, "", filenameTmpl)
		if enc == layer.EncodingBase64 {
			vars.NotBase64, vars.Declared = true, mimeType
		}
		return ref, vars, err
	}
	vars.Kind = src.kind
	if vars.Kind == "" {
		vars.Kind = kindOf(src.mime, enc)
	}
	if src.ext == "" {
		src.ext = extOf(src.mime)
	}
	opts := store.PutOptions{
		Namespace: x.d.Call.Server,
		MIMEType:  src.mime,
		Filename:  x.filename(t, filenameTmpl, vars, src.mime, src.ext),
		Scope:     x.d.Call.Scope,
		Source:    store.Source{Server: x.d.Call.Server, Tool: x.d.Call.Tool, Path: t.path, Layer: x.step},
		MaxBytes:  x.e.cfg.MaxArtifactBytes,
		Quota:     x.e.quota,
	}
	sref, err := x.e.store.Put(ctx, src.r, opts)
	if err != nil && src.plain != nil && ctx.Err() == nil {
		// The put left nothing behind. A value that proved not plain goes
		// again, decoded with its shape; invalid base64 reports what
		// Parse finds, as it did before anything was stored.
		if src.plain.notPlain {
			t.shaped = true
			return x.put(ctx, t, val, enc, mimeType, filenameTmpl)
		}
		if perr := base64Error(val[1 : len(val)-1]); perr != nil {
			return ArtifactRef{}, vars, perr
		}
	}
	if err != nil && ctx.Err() == nil {
		// A limit refused the value, or the store failed (a full disk, an
		// object store that is down): either way the result keeps a
		// preview and a note, never the value whole, so a broken store
		// cannot blow the budget the result was to be held to.
		ref, rerr := x.refused(t, val, enc, mimeType, opts, err)
		if rerr != nil {
			return ArtifactRef{}, vars, rerr
		}
		if ref.NotStored.Limit == "" {
			x.fail(t.path, fmt.Errorf("storing %s: %w: %w", vars.Kind, ErrStoreWrite, err))
		}
		vars.Ref = ref
		x.done[key] = stored{ref: ref, val: val}
		return ref, vars, nil
	}
	if err != nil {
		return ArtifactRef{}, vars, fmt.Errorf("storing %s: %w", vars.Kind, err)
	}
	ref := RefFromStore(asPut(sref, opts))
	ref.Encoding = src.shape
	if x.e.linker != nil && !ref.Truncated {
		ref.URL = x.e.linker.ArtifactURL(ref)
	}
	if src.counter != nil {
		vars.Chars = src.counter.chars
	}
	ref.Content, vars.Content = x.e.inspectStored(ctx, x.d.Call, x.step, t.path, sref)
	vars.Ref = ref
	x.done[key] = stored{ref: ref, val: val, content: vars.Content}
	x.out.artifacts = append(x.out.artifacts, ref)
	x.e.emit(Event{Type: EventArtifactStored, Server: x.d.Call.Server, Tool: x.d.Call.Tool, Scope: x.d.Call.Scope, Layer: x.step, Path: t.path,
		Artifact: &ref, AlreadyStored: sref.AlreadyStored, Meta: x.rws[t.rw].Meta})
	return ref, vars, nil
}

// refused returns the ref of a value the store did not keep (err): the
// fallback's truncated ref (docs/design.md, "The store's promises"),
// named by the hash of the bytes that would have been stored, with a note
// naming the limit that refused it, or the store's failure (then Limit is
// empty and the caller reports the failure); and emits
// EventArtifactRefused.
func (x *executor) refused(t *target, val []byte, enc layer.Encoding, mimeType string, opts store.PutOptions, err error) (ArtifactRef, error) {
	src, serr := x.source(t, val, enc, mimeType)
	if serr != nil {
		return ArtifactRef{}, serr
	}
	h := sha256.New()
	n, cerr := io.Copy(h, src.r)
	if cerr != nil {
		return ArtifactRef{}, fmt.Errorf("storing %s: %w", opts.MIMEType, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	sref := store.NewRef(store.NewID("truncated", sum, store.DefaultIDPrefixLen), sum, n, opts)
	sref.Truncated = true
	ref := RefFromStore(sref)
	ns := notStoredFor(err, opts.MaxBytes)
	ref.NotStored = ns
	if ns.Limit != "" {
		x.e.log.Warn("value not stored: over a store limit", "server", x.d.Call.Server, "tool", x.d.Call.Tool, "path", t.path, "size", n, "limit", ns.Limit, "max", ns.Max)
	}
	x.e.emit(Event{Type: EventArtifactRefused, Server: x.d.Call.Server, Tool: x.d.Call.Tool, Scope: x.d.Call.Scope, Layer: x.step, Path: t.path, Artifact: &ref, Meta: x.rws[t.rw].Meta})
	return ref, nil
}

// notStoredFor is the note of a put that failed with err: the store limit
// that refused it (maxBytes is the put's own), or the store's failure in
// its own last words ("no space left on device"), which name no path of
// the store's for the model to read.
func notStoredFor(err error, maxBytes int64) *NotStored {
	if !errors.Is(err, store.ErrTooLarge) && !errors.Is(err, store.ErrQuotaExceeded) {
		why := err.Error()
		if i := strings.LastIndex(why, ": "); i >= 0 {
			why = why[i+2:]
		}
		return &NotStored{Reason: "the artifact store failed (" + why + ")"}
	}
	ns := &NotStored{Limit: "max_artifact_bytes", Max: maxBytes}
	ns.Reason = fmt.Sprintf("it is larger than the store's limit %s (%s)", ns.Limit, humanize.Bytes(ns.Max))
	if le := (*store.LimitError)(nil); errors.As(err, &le) {
		ns.Limit, ns.Max = le.Limit, le.Max
		ns.Reason = quotaReason(le)
	}
	return ns
}

// quotaReason says, for the model, which quota refused a value: what the
// session, trace or user holds is over the limit with it, not the value
// itself (max_artifact_bytes is per value).
func quotaReason(le *store.LimitError) string {
	if le.Limit == "max_artifact_bytes" {
		return fmt.Sprintf("it is larger than the store's limit %s (%s)", le.Limit, humanize.Bytes(le.Max))
	}
	if group, ok := strings.CutPrefix(le.Limit, "max_artifacts_per_"); ok {
		return fmt.Sprintf("this %s has reached the store's limit %s (%d)", group, le.Limit, le.Max)
	}
	group := strings.TrimSuffix(strings.TrimPrefix(le.Limit, "max_"), "_bytes")
	return fmt.Sprintf("it would take this %s's artifacts to %s, past the store's limit %s (%s)",
		group, humanize.Bytes(le.Used), le.Limit, humanize.Bytes(le.Max))
}

// refusedPreviewRunes is how much of a refused text value the result
// keeps when its rewrite keeps none (noopstore's inline preview).
const refusedPreviewRunes = 500

// asPut returns the ref a put returned as this put named it: a store
// that already held the bytes (content addressing) returns the id and
// MIME type it has, and may return the name and source of the put that
// stored them first; this call's result must show its own ("thumbnail.png"
// from the layer that found it, not an earlier call's "content.png").
func asPut(r store.Ref, o store.PutOptions) store.Ref {
	if o.Filename != "" {
		r.Filename = o.Filename
	}
	r.Source = o.Source
	r.Scope = o.Scope
	return r
}

// source is what put stores: the bytes and what they are.
type source struct {
	r         io.Reader
	mime      string
	kind, ext string // from the bytes' signature; empty when none matched
	counter   *charCounter
	shape     *Base64Shape
	plain     *plainReader // r, when it streams unvalidated base64
	// instead, when set, says to store the value in this encoding instead:
	// the one asked for would lose the original.
	instead layer.Encoding
}

// source prepares the bytes of val in the encoding enc.
func (x *executor) source(t *target, val []byte, enc layer.Encoding, mimeType string) (source, error) {
	switch enc {
	case layer.EncodingBase64:
		return x.base64Source(t, val, mimeType)
	case layer.EncodingText:
		if t.kind != jsonwalk.KindString {
			return source{}, ErrNotString
		}
		if jsonstr.HasLoneSurrogate(val[1 : len(val)-1]) {
			// JSON can hold a lone UTF-16 surrogate that UTF-8 cannot:
			// the string literal itself is stored, byte-exact.
			return source{instead: layer.EncodingJSON}, nil
		}
		if mimeType == "" {
			mimeType = "text/plain; charset=utf-8"
		}
		counter := &charCounter{r: jsonstr.NewReader(val[1 : len(val)-1])}
		return source{r: counter, counter: counter, mime: mimeType}, nil
	default:
		if mimeType == "" {
			mimeType = "application/json"
		}
		return source{r: bytes.NewReader(val), mime: mimeType}, nil
	}
}

// base64Source prepares the decoded bytes of a base64 string. Plain
// standard base64 streams from the document, decoded once while the store
// hashes and writes it; any other shape is decoded once into memory, to
// check that its Base64Shape rebuilds the original string exactly, or else
// the string itself is stored.
func (x *executor) base64Source(t *target, val []byte, mimeType string) (source, error) {
	if t.kind != jsonwalk.KindString {
		return source{}, ErrNotString
	}
	body := val[1 : len(val)-1]
	dec, err := b64.NewReader(body)
	if err != nil {
		return source{}, err
	}
	src := source{mime: mimeType}
	var head []byte
	var info b64.Info
	if !t.shaped && dec.Info().Offset == 0 && len(body)%4 == 0 && canonicalTail(body, plainDecodedLen(body)) {
		// Plain as far as the cheap checks see: whether it holds no escape,
		// whitespace or URL-safe character, and is valid, shows as it
		// streams (plainReader); put handles the failures.
		if head, err = b64.DecodeHead(body, magic.HeadSize); err != nil {
			if perr := base64Error(body); perr != nil {
				err = perr
			}
			return source{}, err
		}
		src.plain = &plainReader{r: dec}
		src.r = src.plain
	} else {
		if info, err = b64.Parse(body); err != nil {
			return source{}, err
		}
		decoded, shape, ok, err := decodeShaped(body, info)
		if err != nil {
			return source{}, err
		}
		if !ok {
			return source{instead: layer.EncodingText}, nil
		}
		src.r, src.shape = bytes.NewReader(decoded), shape
		head = decoded[:min(len(decoded), magic.HeadSize)]
	}
	typ, ok := magic.Detect(head)
	if x.rws[t.rw].Verify && !ok {
		if perr := base64Error(body); perr != nil {
			return source{}, perr
		}
		return source{}, ErrNoSignature
	}
	if ok {
		src.kind, src.ext = typ.Kind, typ.Ext
		if src.mime == "" {
			src.mime = typ.MIME
		}
	}
	if src.mime == "" {
		src.mime = info.DataURIMediaType
	}
	if src.mime == "" {
		src.mime = "application/octet-stream"
	}
	return src, nil
}

// base64Error is Parse's verdict on body: the error a value that is not
// base64 reports wherever it fails.
func base64Error(body []byte) error {
	_, err := b64.Parse(body)
	return err
}

// plainDecodedLen is the decoded length of body if it is plain base64:
// its characters but the trailing padding.
func plainDecodedLen(body []byte) int64 {
	n := len(body)
	for n > 0 && body[n-1] == '=' {
		n--
	}
	return int64(n/4*3 + [4]int{0, 0, 1, 2}[n%4])
}

// errNotPlain stops the streaming of a value that is not plain standard
// base64; put decodes it again with its shape.
var errNotPlain = errors.New("not plain standard base64")

// plainReader streams a value that passed the cheap checks for plain
// standard base64, and fails with errNotPlain at the first chunk that
// holds an escape, whitespace or the URL-safe alphabet: storing such a
// value's bytes alone would lose its shape.
type plainReader struct {
	r        *b64.Reader
	notPlain bool
}

func (p *plainReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if info := p.r.Info(); info.Escaped || info.URLSafe {
		p.notPlain = true
		return 0, errNotPlain
	}
	return n, err
}

// decodeShaped decodes a base64 string that is not plain standard base64
// and describes its shape; ok is false when no shape rebuilds the string
// ("TOKabc" decodes as "TOKabQ" does; stray whitespace; ragged lines).
func decodeShaped(body []byte, info b64.Info) (decoded []byte, shape *Base64Shape, ok bool, err error) {
	dec, err := b64.NewReader(body)
	if err != nil {
		return nil, nil, false, err
	}
	var buf bytes.Buffer
	buf.Grow(int(info.DecodedLen))
	if _, err := buf.ReadFrom(dec); err != nil {
		return nil, nil, false, err
	}
	orig, err := jsonwalk.UnescapeString(body)
	if err != nil {
		return nil, nil, false, err
	}
	prefix, err := jsonwalk.UnescapeString(body[:info.Offset])
	if err != nil {
		return nil, nil, false, err
	}
	shape, ok = describeBase64(orig, len(prefix), info.URLSafe, buf.Bytes())
	return buf.Bytes(), shape, ok, nil
}

// filename names the artifact: the rendered template, else a sibling that
// names the value, else one made of the tool and key.
func (x *executor) filename(t *target, tmpl string, vars templateVars, mimeType, ext string) string {
	// A rendered name is a name, never a path: "{arg.path}" may be
	// "../../root/.ssh/authorized_keys".
	filename := safeFilename(render(tmpl, vars))
	if filename != "" && path.Ext(filename) == "" && ext != ".bin" {
		filename += ext
	}
	if filename == "" {
		// A sibling that names the value makes the best file name.
		filename = safeFilename(render("{.filename|.file_name|.name|.title|.view_name|.path}", vars))
		if filename != "" && path.Ext(filename) == "" {
			filename += ext
		}
	}
	if filename == "" {
		filename = argFilename(x.d.Call.Arguments, mimeType, ext)
	}
	if filename == "" {
		filename = defaultFilename(x.d.Call.Tool, t.lastKey, ext)
	}
	return filename
}

// lookup resolves ".key" against the value's parent object and "arg.key"
// against the call's arguments.
func (x *executor) lookup(t *target) func(string) string {
	return func(name string) string {
		if k, ok := strings.CutPrefix(name, "arg."); ok {
			return clip(argument(x.d.Call.Arguments, k))
		}
		k := strings.TrimPrefix(name, ".")
		if t.parent < 0 {
			return ""
		}
		raw := x.bufs[t.buf].raw
		sp, ok := x.siblings(t.buf, t.parent).Get(k)
		if !ok {
			return ""
		}
		off, end, kind := sp.Off, sp.End, sp.Kind
		if kind == jsonwalk.KindString {
			s, err := jsonwalk.UnescapeString(raw[off+1 : end-1])
			if err != nil {
				return ""
			}
			return clip(s)
		}
		if kind == jsonwalk.KindNumber || kind == jsonwalk.KindLiteral {
			return string(raw[off:end])
		}
		return ""
	}
}

// siblings lists the members of the object at raw[obj] once per step: a
// template may name several siblings, and the object may hold a 10 MB
// string that each lookup would skip again.
func (x *executor) siblings(buf, obj int) jsonwalk.Object {
	key := [2]int{buf, obj}
	if m, ok := x.members[key]; ok {
		return m
	}
	m := jsonwalk.Members(x.bufs[buf].raw, obj)
	if x.members == nil {
		x.members = map[[2]int]jsonwalk.Object{}
	}
	x.members[key] = m
	return m
}

// block turns an MCP content block into a text block with the summary and
// ref and a resource_link to the artifact.
func (x *executor) block(ctx context.Context, t *target) ([]byte, error) {
	rw := &x.rws[t.rw]
	raw := x.bufs[t.buf].raw
	if t.kind != jsonwalk.KindObject || t.keyOff >= 0 {
		return nil, fmt.Errorf("%w: block form needs a content block (an object in an array)", ErrBadRewrite)
	}
	// The block's members are listed once, with the value's span: each
	// jsonwalk.Member call would skip its 600 KB text again.
	members := func(obj int) jsonwalk.Object { return x.siblings(t.buf, obj) }
	bv, err := blockValueOf(raw, members, t.off, rw.MIME, rw.Encoding)
	if err != nil {
		return nil, err
	}
	vt := *t
	vt.off, vt.end, vt.kind, vt.parent = bv.val.Off, bv.val.End, bv.val.Kind, bv.obj
	vt.path = t.path + "." + bv.field
	if bv.uri != "" && rw.Filename == "" {
		vt.lastKey = ""
	}
	filename := rw.Filename
	if filename == "" && bv.uri != "" {
		filename = uriBase(bv.uri)
	}
	ref, vars, err := x.put(ctx, &vt, raw[bv.val.Off:bv.val.End], encodingFor(bv.enc, bv.val.Kind), bv.mime, filename)
	if err != nil {
		return nil, err
	}
	rep := replacement{Artifact: ref, Summary: x.summary(rw, vars)}
	if rw.Keep > 0 && bv.val.Kind == jsonwalk.KindString && vars.Kind == "Text" {
		rep.Preview = prefixRunes(raw[bv.val.Off+1:bv.val.End-1], rw.Keep)
	}
	if bv.uri != "" {
		rep.Summary += "\nOriginal resource: " + bv.uri
	}
	if media := mediaOf(bv.typ); media != "" && !strings.HasPrefix(ref.MIMEType, bv.typ+"/") {
		// The text block replaces the block's type: the model still
		// learns what the block claimed to be, and that it was not.
		rep.Summary += "\nIt came as " + bv.typ + " content, but its data is not " + media + "."
	}
	return x.blockView(ctx, t, bv, rep, linkDescription(vars)), nil
}

// mediaOf names what an image or audio block's data should be; "" for
// other blocks.
func mediaOf(typ string) string {
	switch typ {
	case "image":
		return "an image"
	case "audio":
		return "audio"
	}
	return ""
}

// blockValue is the value of a content block that the block form stores.
type blockValue struct {
	typ, field string
	obj        int // the object holding field: the block or its resource
	val        jsonwalk.Span
	uri, mime  string
	enc        layer.Encoding
}

// blockValueOf finds the value a content block at raw[off] carries (an
// image's or audio's data, a resource's blob or text, a text block's text)
// and how it is encoded; mime and enc are the rewrite's, which win.
// members lists an object's members.
func blockValueOf(raw []byte, members func(obj int) jsonwalk.Object, off int, mime string, enc layer.Encoding) (blockValue, error) {
	str := func(obj int, k string) string {
		sp, ok := members(obj).Get(k)
		if !ok || sp.Kind != jsonwalk.KindString {
			return ""
		}
		s, _ := jsonwalk.UnescapeString(raw[sp.Off+1 : sp.End-1])
		return s
	}
	auto := enc == "" || enc == layer.EncodingAuto
	bv := blockValue{typ: str(off, "type"), obj: off, mime: mime, enc: enc}
	switch bv.typ {
	case "image", "audio":
		bv.field = "data"
		if auto {
			bv.enc = layer.EncodingBase64
		}
		if bv.mime == "" {
			bv.mime = str(off, "mimeType")
		}
	case "resource":
		res, ok := members(off).Get("resource")
		if !ok || res.Kind != jsonwalk.KindObject {
			return bv, fmt.Errorf("%w: resource block without resource object", ErrBadRewrite)
		}
		bv.obj = res.Off
		bv.uri = str(bv.obj, "uri")
		if bv.mime == "" {
			bv.mime = str(bv.obj, "mimeType")
		}
		bv.field, bv.enc = "text", enc
		if auto {
			bv.enc = layer.EncodingText
		}
		if _, ok := members(bv.obj).Get("blob"); ok {
			bv.field = "blob"
			if auto {
				bv.enc = layer.EncodingBase64
			}
		}
	case "text":
		bv.field = "text"
	default:
		return bv, fmt.Errorf("%w: cannot store a %q block", ErrBadRewrite, bv.typ)
	}
	val, ok := members(bv.obj).Get(bv.field)
	if !ok {
		return bv, fmt.Errorf("%w: %s block has no %s", ErrBadRewrite, bv.typ, bv.field)
	}
	bv.val = val
	return bv, nil
}

// linkDescription is the short description of an artifact's
// resource_link: what it is and its size ("PNG image, 2.3 MB").
func linkDescription(v templateVars) string {
	kind := v.Kind
	if kind == "" {
		kind = "Content"
	}
	return kind + ", " + humanize.Bytes(v.Ref.SizeBytes)
}

// truncate stores the whole value and keeps a prefix of it.
func (x *executor) truncate(ctx context.Context, t *target) ([]byte, error) {
	rw := &x.rws[t.rw]
	val := x.bufs[t.buf].raw[t.off:t.end]
	enc := encodingFor(rw.Encoding, t.kind)
	ref, vars, err := x.put(ctx, t, val, enc, rw.MIME, rw.Filename)
	if err != nil {
		return nil, err
	}
	keep, last := max(rw.Keep, 0), max(rw.KeepLast, 0)
	switch t.kind {
	case jsonwalk.KindString:
		kept := prefixRunes(val[1:len(val)-1], keep)
		tail := ""
		if last > 0 {
			all, _ := jsonstr.Unescape(nil, val[1:len(val)-1])
			rs := []rune(string(all))
			from := max(len(rs)-last, utf8.RuneCountInString(kept))
			if from < len(rs) {
				tail = string(rs[from:])
			}
		}
		total := vars.Chars
		if total == 0 {
			total = utf8.RuneCountInString(kept) + utf8.RuneCountInString(tail)
		}
		shown := utf8.RuneCountInString(kept) + utf8.RuneCountInString(tail)
		marker := fmt.Sprintf("\n… [truncated: showing %d of %d chars; the full text is artifact %s at %s ]", shown, total, ref.ID, ref.URI)
		if ref.NotStored != nil {
			marker = fmt.Sprintf("\n… [truncated: showing %d of %d chars; the full text was NOT stored: %s]", shown, total, ref.NotStored.Reason)
		}
		if rw.Summary != "" {
			marker = "\n… " + ownWords(rw.Summary, vars, strings.TrimPrefix(marker, "\n… "))
		}
		if tail != "" {
			marker += "\n"
		}
		return jsonstr.AppendString(nil, kept+marker+tail), nil
	case jsonwalk.KindArray, jsonwalk.KindObject:
		spans := make([][2]int, 0, 16)
		for _, c := range children(val, 0) {
			spans = append(spans, [2]int{c.start, c.end})
		}
		keep = min(keep, len(spans))
		last = min(last, len(spans)-keep)
		what := map[jsonwalk.Kind]string{jsonwalk.KindArray: "items", jsonwalk.KindObject: "members"}[t.kind]
		var marker string
		switch {
		case ref.NotStored != nil:
			marker = fmt.Sprintf("[truncated: showing %d of %d %s; the rest was NOT stored: %s]", keep+last, len(spans), what, ref.NotStored.Reason)
		case last > 0:
			marker = fmt.Sprintf("[truncated: showing the first %d and the last %d of %d %s; all of it (%s) is artifact %s at %s ]", keep, last, len(spans), what, humanize.Bytes(ref.SizeBytes), ref.ID, ref.URI)
		default:
			marker = fmt.Sprintf("[truncated: showing %d of %d %s; all of it (%s) is artifact %s at %s ]", keep, len(spans), what, humanize.Bytes(ref.SizeBytes), ref.ID, ref.URI)
		}
		if ref.NotStored == nil && t.path != "" && len(spans) > 0 {
			// The artifact is part of the result: queries take the paths
			// the model sees here (package query), and the note shows one.
			marker = strings.TrimSuffix(marker, " ]") + resultPathNote(t.path, val, spans[len(spans)-1][0], len(spans)-1, t.kind) + " ]"
		}
		if rw.Summary != "" {
			marker = ownWords(rw.Summary, vars, marker)
		}
		open, close := byte('['), byte(']')
		if t.kind == jsonwalk.KindObject {
			open, close = '{', '}'
		}
		out := []byte{open}
		for i := 0; i < keep; i++ {
			out = append(out, val[spans[i][0]:spans[i][1]]...)
			out = append(out, ',')
		}
		switch {
		case t.kind == jsonwalk.KindObject:
			out = append(out, `"_mcpx_truncated":`...)
			out = jsonstr.AppendString(out, marker)
		case x.bufs[t.buf].carrier < 0 && t.path == "content" && x.d.IsMCP():
			// An MCP result's content holds blocks: the marker is one.
			out = append(out, `{"type":"text","text":`...)
			out = append(jsonstr.AppendString(out, marker), '}')
		default:
			out = jsonstr.AppendString(out, marker)
		}
		for i := len(spans) - last; i < len(spans); i++ {
			out = append(out, ',')
			out = append(out, val[spans[i][0]:spans[i][1]]...)
		}
		return append(out, close), nil
	default:
		return nil, fmt.Errorf("%w: cannot truncate a %s", ErrBadRewrite, map[jsonwalk.Kind]string{jsonwalk.KindNumber: "number", jsonwalk.KindLiteral: "literal"}[t.kind])
	}
}

// maxPathNote bounds the example path a truncation note shows: the
// guardrail keeps room for a note of about 220 characters.
const maxPathNote = 60

// resultPathNote is what a truncation note of a value at path in the
// result adds: that the artifact answers the result's paths, with the
// path of its last item (index last) or member (whose key starts at
// val[start]) as an example.
func resultPathNote(path string, val []byte, start, last int, kind jsonwalk.Kind) string {
	example := path + "." + strconv.Itoa(last)
	if kind == jsonwalk.KindObject {
		end, ok := jsonwalk.StringEnd(val, start)
		key, err := jsonwalk.UnescapeString(val[start+1 : max(end-1, start+1)])
		if !ok || err != nil {
			return " ; query it by this result's paths"
		}
		example = path + "." + gjson.Escape(key)
	}
	if len(example) > maxPathNote {
		return " ; query it by this result's paths"
	}
	return " ; query it by this result's paths, as " + example
}

// prefixRunes unescapes the start of a JSON string body and returns its
// first n runes.
func prefixRunes(body []byte, n int) string {
	if n <= 0 {
		return ""
	}
	// Unescape at most 6n+16 source bytes: enough for n runes of any
	// form. n may be anything up to MaxKeep (callers bound it); compare
	// before multiplying so that no n overflows.
	lim := len(body)
	if n < (len(body)-16)/6 {
		lim = 6*n + 16
	}
	for lim < len(body) && body[lim-1] == '\\' {
		lim++
	}
	s, err := jsonstr.Unescape(nil, body[:lim])
	for err != nil && lim > 0 {
		lim--
		s, err = jsonstr.Unescape(nil, body[:lim])
	}
	for i := range string(s) {
		if n == 0 {
			return string(s[:i])
		}
		n--
	}
	return string(s)
}

// charCounter counts the characters (UTF-8 sequences) read through it.
type charCounter struct {
	r     io.Reader
	chars int
}

func (c *charCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.chars += n - continuationBytes(p[:n])
	return n, err
}

// continuationBytes counts the bytes of b of the form 10xxxxxx, eight at a
// time: a byte-at-a-time loop cost as much as the store's hashing.
func continuationBytes(b []byte) int {
	const high = 0x8080808080808080
	n := 0
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		// bit 7 set and bit 6 clear: w<<1 moves each byte's bit 6 to bit 7
		n += bits.OnesCount64(w &^ (w << 1) & high)
		b = b[8:]
	}
	for _, c := range b {
		if c&0xC0 == 0x80 {
			n++
		}
	}
	return n
}

// argument reads a call argument for a template: a plain path (keys,
// indexes), never a gjson query or modifier, which could cost seconds on
// large arguments. Anything else renders empty.
func argument(args []byte, k string) string {
	p, err := jsonwalk.ParsePath(k)
	if err != nil || p.Len() == 0 || p.HasWildcard() || p.Len() > 32 {
		return ""
	}
	var b strings.Builder
	for i := 0; i < p.Len(); i++ {
		if i > 0 {
			b.WriteByte('.')
		}
		key, _ := p.Comp(i)
		b.WriteString(gjson.Escape(key))
	}
	return gjson.GetBytes(args, b.String()).String()
}

// canonicalTail reports whether the last base64 character of body, which
// decodes to n bytes, leaves its unused low bits zero: otherwise two
// different strings decode to the same bytes.
func canonicalTail(body []byte, n int64) bool {
	unused := map[int64]byte{0: 0, 1: 0x0f, 2: 0x03}[n%3]
	if unused == 0 {
		return true
	}
	for i := len(body) - 1; i >= 0; i-- {
		c := body[i]
		switch {
		case c == '=' || c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		case (c == 'n' || c == 'r' || c == 't') && i > 0 && body[i-1] == '\\':
			i--
			continue
		case i >= 5 && body[i-5] == '\\' && body[i-4] == 'u':
			r, ok := jsonstr.Hex4(body[i-3 : i+1])
			if !ok {
				return true
			}
			if r == '=' || r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				i -= 5
				continue
			}
			c = byte(r)
		}
		v, ok := b64Value(c)
		return !ok || v&unused == 0
	}
	return true
}

func b64Value(c byte) (byte, bool) {
	switch {
	case c >= 'A' && c <= 'Z':
		return c - 'A', true
	case c >= 'a' && c <= 'z':
		return c - 'a' + 26, true
	case c >= '0' && c <= '9':
		return c - '0' + 52, true
	case c == '+' || c == '-':
		return 62, true
	case c == '/' || c == '_':
		return 63, true
	}
	return 0, false
}
