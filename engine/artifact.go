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
		if !canonicalTail(body, info.DecodedLen) {
			// Bits past the last byte are set ("TOKabc" decodes as
			// "TOKabQ" does): the decoded bytes could not give the
			// string back, so the string itself is stored.
			return x.put(ctx, t, val, EncodingText, "", filenameTmpl)
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
		if hasLoneSurrogate(val[1 : len(val)-1]) {
			// JSON can hold a lone UTF-16 surrogate that UTF-8 cannot:
			// the string literal itself is stored, byte-exact.
			return x.put(ctx, t, val, EncodingJSON, "", filenameTmpl)
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
	// A rendered name is a name, never a path: "{arg.path}" may be
	// "../../root/.ssh/authorized_keys".
	filename := safeFilename(Render(filenameTmpl, vars))
	if filename != "" && path.Ext(filename) == "" && ext != ".bin" {
		filename += ext
	}
	if filename == "" {
		// A sibling that names the value makes the best file name.
		filename = safeFilename(Render("{.filename|.file_name|.name|.title|.view_name|.path}", vars))
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
			return clip(argument(x.d.Call.Arguments, k))
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
	keep, last := max(rw.Keep, 0), max(rw.KeepLast, 0)
	switch t.kind {
	case KindString:
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
		marker := fmt.Sprintf("\n… [truncated: showing %d of %d chars; full text in artifact %s (%s)]", shown, total, ref.ID, ref.URI)
		if rw.Summary != "" {
			marker = "\n… [" + Render(rw.Summary, vars) + "]"
		}
		if tail != "" {
			marker += "\n"
		}
		return jsonstr.AppendString(nil, kept+marker+tail), nil
	case KindArray, KindObject:
		spans := make([][2]int, 0, 16)
		for _, c := range children(val, 0) {
			spans = append(spans, [2]int{c.start, c.end})
		}
		keep = min(keep, len(spans))
		last = min(last, len(spans)-keep)
		what := map[Kind]string{KindArray: "items", KindObject: "members"}[t.kind]
		var marker string
		switch {
		case rw.Summary != "":
			marker = Render(rw.Summary, vars)
		case last > 0:
			marker = fmt.Sprintf("[truncated: showing the first %d and the last %d of %d %s; all of it (%s) in artifact %s (%s)]", keep, last, len(spans), what, HumanBytes(ref.SizeBytes), ref.ID, ref.URI)
		default:
			marker = fmt.Sprintf("[truncated: showing %d of %d %s; all of it (%s) in artifact %s (%s)]", keep, len(spans), what, HumanBytes(ref.SizeBytes), ref.ID, ref.URI)
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
		switch {
		case t.kind == KindObject:
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
		return nil, fmt.Errorf("%w: cannot truncate a %s", ErrBadRewrite, map[Kind]string{KindNumber: "number", KindLiteral: "literal"}[t.kind])
	}
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
	for _, b := range p[:n] {
		if b&0xC0 != 0x80 {
			c.chars++
		}
	}
	return n, err
}

// argument reads a call argument for a template: a plain path (keys,
// indexes), never a gjson query or modifier, which could cost seconds on
// large arguments. Anything else renders empty.
func argument(args []byte, k string) string {
	p, err := ParsePath(k)
	if err != nil || p.Len() == 0 || p.HasWildcard() || p.Len() > 32 {
		return ""
	}
	var b strings.Builder
	for i, c := range p.comps {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(gjson.Escape(c.key))
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
			r, ok := hexRune(body[i-3 : i+1])
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

func hexRune(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// hasLoneSurrogate reports a \uD800-\uDFFF escape in a JSON string body
// that is not half of a pair: UTF-8 cannot hold it.
func hasLoneSurrogate(body []byte) bool {
	for i := 0; i+5 < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := hexRune(body[i+2 : i+6])
		if !ok || r < 0xd800 || r > 0xdfff {
			i += 5
			continue
		}
		if r >= 0xdc00 {
			return true // a low half first
		}
		if i+11 >= len(body) || body[i+6] != '\\' || body[i+7] != 'u' {
			return true
		}
		r2, ok := hexRune(body[i+8 : i+12])
		if !ok || r2 < 0xdc00 || r2 > 0xdfff {
			return true
		}
		i += 11
	}
	return false
}
