package engine

// Storing values: what ActionArtifact and ActionTruncate do to one value.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
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
	if rw.Keep > 0 && t.kind == KindString && vars.Kind == "Text" {
		rep.Preview = prefixRunes(val[1:len(val)-1], rw.Keep)
	}
	if rw.Form == FormText {
		return jsonstr.Append(nil, rep.marshal()), nil
	}
	return rep.marshal(), nil
}

func (x *executor) summary(rw *Rewrite, v Vars) string {
	if rw.Summary != "" {
		return Render(rw.Summary, v)
	}
	return DefaultSummary(v)
}

// put streams a value into the store.
func (x *executor) put(ctx context.Context, t *target, val []byte, enc Encoding, mimeType, filenameTmpl string) (ArtifactRef, Vars, error) {
	vars := Vars{Server: x.d.Call.Server, Tool: x.d.Call.Tool, Path: t.path, Lookup: x.lookup(t)}
	key := fmt.Sprintf("%d\x00%s\x00%s\x00%d", t.rw, t.path, enc, len(val))
	if prev, ok := x.done[key]; ok && bytes.Equal(prev.val, val) {
		vars.Ref = prev.ref
		vars.Kind = kindOf(prev.ref.MIMEType, enc)
		return prev.ref, vars, nil
	}
	var r io.Reader
	var ext string
	var counter *charCounter
	switch enc {
	case EncodingBase64:
		if t.kind != KindString {
			return ArtifactRef{}, vars, ErrNotString
		}
		body := val[1 : len(val)-1]
		info, err := b64.Parse(body)
		if err != nil {
			return ArtifactRef{}, vars, err
		}
		head, err := b64.DecodeHead(body, magic.HeadSize)
		if err != nil {
			return ArtifactRef{}, vars, err
		}
		typ, ok := magic.Detect(head)
		if x.rws[t.rw].Verify && !ok {
			return ArtifactRef{}, vars, ErrNoSignature
		}
		if ok {
			vars.Kind, ext = typ.Kind, typ.Ext
			if mimeType == "" {
				mimeType = typ.MIME
			}
		}
		if mimeType == "" {
			mimeType = info.DataURIMediaType
		}
		if mimeType == "" {
			mimeType = "application/octet-stream"
		}
		dec, err := b64.NewReader(body)
		if err != nil {
			return ArtifactRef{}, vars, err
		}
		r = dec
	case EncodingText:
		if t.kind != KindString {
			return ArtifactRef{}, vars, ErrNotString
		}
		counter = &charCounter{r: jsonstr.NewReader(val[1 : len(val)-1])}
		r = counter
		if mimeType == "" {
			mimeType = "text/plain; charset=utf-8"
		}
	default:
		r = bytes.NewReader(val)
		if mimeType == "" {
			mimeType = "application/json"
		}
	}
	if vars.Kind == "" {
		vars.Kind = kindOf(mimeType, enc)
	}
	if ext == "" {
		ext = extOf(mimeType)
	}
	filename := Render(filenameTmpl, vars)
	if filename != "" && path.Ext(filename) == "" && ext != ".bin" {
		filename += ext
	}
	if filename == "" {
		// A sibling that names the value makes the best file name.
		filename = Render("{.filename|.file_name|.name|.title|.view_name|.path}", vars)
		filename = sanitizeFilename(path.Base(filename))
		if filename == "." || filename == "/" {
			filename = ""
		}
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
	sref, err := x.e.store.Put(ctx, r, store.PutOptions{
		Namespace: x.d.Call.Server,
		MIMEType:  mimeType,
		Filename:  filename,
		Scope:     x.d.Call.Scope,
		Source:    Source{Server: x.d.Call.Server, Tool: x.d.Call.Tool, Path: t.path, Layer: x.step},
		MaxBytes:  x.e.cfg.MaxArtifactBytes,
	})
	if err != nil {
		return ArtifactRef{}, vars, fmt.Errorf("storing %s: %w", vars.Kind, err)
	}
	ref := RefFromStore(sref)
	if x.e.linker != nil && !ref.Truncated {
		ref.URL = x.e.linker.ArtifactURL(ref)
	}
	if counter != nil {
		vars.Chars = counter.chars
	}
	vars.Ref = ref
	x.done[key] = stored{ref: ref, val: val}
	x.out.artifacts = append(x.out.artifacts, ref)
	x.e.emit(Event{Type: EventArtifactStored, Server: x.d.Call.Server, Tool: x.d.Call.Tool, Scope: x.d.Call.Scope, Layer: x.step, Path: t.path, Artifact: &ref, Meta: x.rws[t.rw].Meta})
	return ref, vars, nil
}

// lookup resolves ".key" against the value's parent object and "arg.key"
// against the call's arguments.
func (x *executor) lookup(t *target) func(string) string {
	return func(name string) string {
		if k, ok := strings.CutPrefix(name, "arg."); ok {
			return clip(gjson.GetBytes(x.d.Call.Arguments, k).String())
		}
		k := strings.TrimPrefix(name, ".")
		if t.parent < 0 {
			return ""
		}
		raw := x.bufs[t.buf].raw
		sp, ok := x.siblings(t.buf, t.parent)[k]
		if !ok {
			return ""
		}
		off, end, kind := sp.Off, sp.End, sp.Kind
		if kind == KindString {
			s, err := unescapeString(raw[off+1 : end-1])
			if err != nil {
				return ""
			}
			return clip(s)
		}
		if kind == KindNumber || kind == KindLiteral {
			return string(raw[off:end])
		}
		return ""
	}
}

// siblings lists the members of the object at raw[obj] once per step: a
// template may name several siblings, and the object may hold a 10 MB
// string that each Member call would skip again.
func (x *executor) siblings(buf, obj int) map[string]Span {
	key := [2]int{buf, obj}
	if m, ok := x.members[key]; ok {
		return m
	}
	m := map[string]Span{}
	raw := x.bufs[buf].raw
	if obj < len(raw) && raw[obj] == '{' {
		_ = walkTrusted(raw[obj:], func(v *Visit) Step {
			switch {
			case len(v.Path) == 0:
				if v.Leave {
					return Stop
				}
				return Descend
			case v.Leave:
				k := v.Path[0].KeyString()
				m[k] = Span{m[k].Off, obj + v.End, v.Kind}
				return Descend
			}
			m[v.Path[0].KeyString()] = Span{obj + v.Off, obj + v.End, v.Kind}
			return SkipValue
		})
	}
	if x.members == nil {
		x.members = map[[2]int]map[string]Span{}
	}
	x.members[key] = m
	return m
}

// Member finds the value of key in the object starting at raw[obj] without
// copying (a sibling may be a 10 MB string that gjson would copy) and returns
// its span. raw must be valid JSON, as every buffer of a Doc is: strings are
// skipped, not checked.
func Member(raw []byte, obj int, key string) (off, end int, kind Kind, ok bool) {
	if obj < 0 || obj >= len(raw) || raw[obj] != '{' {
		return 0, 0, 0, false
	}
	_ = walkTrusted(raw[obj:], func(v *Visit) Step {
		if v.Leave || len(v.Path) == 0 {
			return Descend
		}
		if len(v.Path) == 1 && v.Path[0].KeyIs(key) {
			off, end, kind, ok = obj+v.Off, obj+v.End, v.Kind, true
			if v.End < 0 {
				e, err := skipContainer(raw, obj+v.Off)
				if err != nil {
					ok = false
				}
				end = e
			}
			return Stop
		}
		return SkipValue
	})
	return off, end, kind, ok
}

// block turns an MCP content block into a text block with the summary and
// ref and a resource_link to the artifact.
func (x *executor) block(ctx context.Context, t *target) ([]byte, error) {
	rw := &x.rws[t.rw]
	raw := x.bufs[t.buf].raw
	if t.kind != KindObject || t.keyOff >= 0 {
		return nil, fmt.Errorf("%w: block form needs a content block (an object in an array)", ErrBadRewrite)
	}
	str := func(obj int, k string) string {
		o, e, kind, ok := Member(raw, obj, k)
		if !ok || kind != KindString {
			return ""
		}
		s, _ := unescapeString(raw[o+1 : e-1])
		return s
	}
	typ := str(t.off, "type")
	mimeType := rw.MIME
	obj, field := t.off, ""
	enc := rw.Encoding
	var uri string
	switch typ {
	case "image", "audio":
		field = "data"
		if enc == "" || enc == EncodingAuto {
			enc = EncodingBase64
		}
		if mimeType == "" {
			mimeType = str(t.off, "mimeType")
		}
	case "resource":
		o, _, kind, ok := Member(raw, t.off, "resource")
		if !ok || kind != KindObject {
			return nil, fmt.Errorf("%w: resource block without resource object", ErrBadRewrite)
		}
		obj = o
		uri = str(o, "uri")
		if mimeType == "" {
			mimeType = str(o, "mimeType")
		}
		if _, _, _, ok := Member(raw, o, "blob"); ok {
			field = "blob"
			if enc == "" || enc == EncodingAuto {
				enc = EncodingBase64
			}
		} else {
			field = "text"
			if enc == "" || enc == EncodingAuto {
				enc = EncodingText
			}
		}
	case "text":
		field = "text"
	default:
		return nil, fmt.Errorf("%w: cannot store a %q block", ErrBadRewrite, typ)
	}
	o, e, kind, ok := Member(raw, obj, field)
	if !ok {
		return nil, fmt.Errorf("%w: %s block has no %s", ErrBadRewrite, typ, field)
	}
	vt := *t
	vt.off, vt.end, vt.kind, vt.parent = o, e, kind, obj
	vt.path = t.path + "." + field
	if uri != "" && rw.Filename == "" {
		vt.lastKey = ""
	}
	filename := rw.Filename
	if filename == "" && uri != "" {
		filename = uriBase(uri)
	}
	ref, vars, err := x.put(ctx, &vt, raw[o:e], encodingFor(enc, kind), mimeType, filename)
	if err != nil {
		return nil, err
	}
	rep := replacement{Artifact: ref, Summary: x.summary(rw, vars)}
	if rw.Keep > 0 && kind == KindString && vars.Kind == "Text" {
		rep.Preview = prefixRunes(raw[o+1:e-1], rw.Keep)
	}
	if uri != "" {
		rep.Summary += " Original resource: " + uri
	}
	out := []byte(`{"type":"text","text":`)
	out = jsonstr.Append(out, rep.marshal())
	if ao, ae, _, ok := Member(raw, t.off, "annotations"); ok {
		out = append(out, `,"annotations":`...)
		out = append(out, raw[ao:ae]...)
	}
	out = append(out, `},{"type":"resource_link","uri":`...)
	out = jsonstr.AppendString(out, ref.URI)
	out = append(out, `,"name":`...)
	out = jsonstr.AppendString(out, nonEmpty(ref.Filename, ref.ID))
	out = append(out, `,"description":`...)
	out = jsonstr.AppendString(out, rep.Summary)
	if ref.MIMEType != "" {
		out = append(out, `,"mimeType":`...)
		out = jsonstr.AppendString(out, ref.MIMEType)
	}
	out = append(out, `,"size":`...)
	return fmt.Appendf(out, "%d}", ref.SizeBytes), nil
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
	keep := max(rw.Keep, 0)
	switch t.kind {
	case KindString:
		kept := prefixRunes(val[1:len(val)-1], keep)
		total := vars.Chars
		if total == 0 {
			total = utf8.RuneCountInString(kept)
		}
		marker := fmt.Sprintf("\n… [truncated: showing %d of %d chars; full text in artifact %s (%s)]", utf8.RuneCountInString(kept), total, ref.ID, ref.URI)
		if rw.Summary != "" {
			marker = "\n… [" + Render(rw.Summary, vars) + "]"
		}
		return jsonstr.AppendString(nil, kept+marker), nil
	case KindArray, KindObject:
		var spans [][2]int
		_ = walkTrusted(val, func(v *Visit) Step {
			if len(v.Path) == 1 && !v.Leave {
				start := v.Off
				if v.KeyOff >= 0 {
					start = v.KeyOff
				}
				spans = append(spans, [2]int{start, v.End})
				if v.End < 0 {
					return SkipValue
				}
			}
			if len(v.Path) == 1 && v.Leave {
				spans[len(spans)-1][1] = v.End
			}
			if len(v.Path) == 0 {
				return Descend
			}
			return SkipValue
		})
		if keep > len(spans) {
			keep = len(spans)
		}
		marker := fmt.Sprintf("[truncated: showing %d of %d %s; all of it (%s) in artifact %s (%s)]", keep, len(spans), map[Kind]string{KindArray: "items", KindObject: "members"}[t.kind], HumanBytes(ref.SizeBytes), ref.ID, ref.URI)
		if rw.Summary != "" {
			marker = Render(rw.Summary, vars)
		}
		open, close := byte('['), byte(']')
		if t.kind == KindObject {
			open, close = '{', '}'
		}
		out := []byte{open}
		for i := 0; i < keep; i++ {
			out = append(out, val[spans[i][0]:spans[i][1]]...)
			out = append(out, ',')
		}
		if t.kind == KindObject {
			out = append(out, `"_mcpx_truncated":`...)
		}
		out = jsonstr.AppendString(out, marker)
		return append(out, close), nil
	default:
		return nil, fmt.Errorf("%w: cannot truncate a %s", ErrBadRewrite, map[Kind]string{KindNumber: "number", KindLiteral: "literal"}[t.kind])
	}
}

// prefixRunes unescapes the start of a JSON string body and returns its
// first n runes.
func prefixRunes(body []byte, n int) string {
	if n <= 0 {
		return ""
	}
	// Unescape at most 4n+16 source bytes: enough for n runes of any form
	// except \u escapes, which the loop below tolerates.
	lim := min(len(body), 6*n+16)
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
	for _, b := range p[:n] {
		if b&0xC0 != 0x80 {
			c.chars++
		}
	}
	return n, err
}
