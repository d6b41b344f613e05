package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/magic"
	"github.com/mcpx-dev/mcpx/store"
)

// Errors a rewrite can fail with; they reach listeners inside a
// layer_failed event and callers inside a *RewriteError.
var (
	// ErrNoSignature: a verified base64 rewrite decoded to bytes with no
	// known file signature.
	ErrNoSignature = errors.New("no known file signature in decoded bytes")
	// ErrNotString: a base64 or text rewrite met a value that is not a string.
	ErrNotString = errors.New("value is not a string")
	// ErrBadRewrite: the rewrite itself is malformed.
	ErrBadRewrite = errors.New("malformed rewrite")
)

// RewriteError says which rewrite of which step failed.
type RewriteError struct {
	Step string
	Path string
	Err  error
}

func (e *RewriteError) Error() string {
	return fmt.Sprintf("layer[%s]: rewrite %q: %v", e.Step, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *RewriteError) Unwrap() error { return e.Err }

// storeOriginalOver is the size past which replaced and dropped values are
// stored first, so that no layer can lose bytes.
const storeOriginalOver = 1024

// target is one value a rewrite applies to.
type target struct {
	rw      int
	buf     int // index into executor.bufs
	off     int
	end     int
	kind    Kind
	parent  int
	keyOff  int
	path    string
	lastKey string
}

// buffer is a document the step edits: a carrier's payload or the result.
type buffer struct {
	raw     []byte
	carrier int // index in Doc.Carriers(); -1 for the result itself
	edits   []Edit
	post    []postOp
}

// postOp is an sjson operation run after the splice: a drop, or a replace
// of a path that does not exist yet.
type postOp struct {
	path  string
	value []byte // nil: delete
	order int
}

// outcome is what a step produced.
type outcome struct {
	raw       []byte
	artifacts []ArtifactRef
	errs      []error
	changed   bool
}

type executor struct {
	e    *Engine
	d    *Doc
	step string
	rws  []Rewrite
	bufs []buffer
	out  outcome
	// done maps a value already stored in this step (same rewrite, same
	// bytes in another carrier) to its ref.
	done map[string]stored
	// members caches the siblings of values that templates look up.
	members map[[2]int]map[string]Span
}

type stored struct {
	ref ArtifactRef
	val []byte
}

func (x *executor) fail(path string, err error) {
	x.out.errs = append(x.out.errs, &RewriteError{Step: x.step, Path: path, Err: err})
}

// execute runs one step's rewrites against d and returns the new result.
func (e *Engine) execute(ctx context.Context, d *Doc, step string, rws []Rewrite) outcome {
	x := &executor{e: e, d: d, step: step, rws: rws, done: map[string]stored{}}
	x.out.raw = d.Raw
	if len(rws) == 0 {
		return x.out
	}
	paths := make([]Path, len(rws))
	var payload, result []int
	// Layers that walk several carriers may ask for one path twice.
	seen := make(map[string]bool, len(rws))
	for i := range rws {
		rw := &rws[i]
		if key := string(rw.Target) + "\x00" + rw.Path + "\x00" + string(rw.Action) + "\x00" + string(rw.Form); seen[key] {
			continue
		} else {
			seen[key] = true
		}
		p, err := ParsePath(rw.Path)
		if err == nil {
			err = validRewrite(rw)
		}
		if err != nil {
			x.fail(rw.Path, fmt.Errorf("%w: %v", ErrBadRewrite, err))
			continue
		}
		paths[i] = p
		if rw.Target == TargetResult && d.IsMCP() {
			result = append(result, i)
		} else {
			payload = append(payload, i)
		}
	}
	var targets []target
	if len(payload) > 0 {
		for ci, c := range d.Carriers() {
			x.bufs = append(x.bufs, buffer{raw: c.Payload, carrier: ci})
			targets = x.match(targets, len(x.bufs)-1, payload, paths)
		}
	}
	if len(result) > 0 {
		x.bufs = append(x.bufs, buffer{raw: d.Raw, carrier: -1})
		targets = x.match(targets, len(x.bufs)-1, result, paths)
	}
	// Replace may create a path that matched nowhere.
	matched := make([]bool, len(rws))
	for _, t := range targets {
		matched[t.rw] = true
	}
	for _, i := range append(slices.Clone(payload), result...) {
		rw := &rws[i]
		if matched[i] || rw.Action != ActionReplace || paths[i].HasWildcard() || rw.Splat {
			continue
		}
		for bi := range x.bufs {
			if (rw.Target == TargetResult && d.IsMCP()) == (x.bufs[bi].carrier < 0) {
				x.bufs[bi].post = append(x.bufs[bi].post, postOp{path: rw.Path, value: rw.Value})
			}
		}
	}
	targets = x.dropOverlaps(targets)
	for i := range targets {
		if err := ctx.Err(); err != nil {
			x.fail(x.rws[targets[i].rw].Path, err)
			break
		}
		x.apply(ctx, &targets[i])
	}
	x.render()
	return x.out
}

func validRewrite(rw *Rewrite) error {
	switch rw.Action {
	case ActionArtifact, ActionTruncate, ActionDrop:
	case ActionReplace:
		if !gjson.ValidBytes(rw.Value) {
			return errors.New("replace needs a valid JSON value")
		}
		if rw.Splat && !gjson.ParseBytes(rw.Value).IsArray() {
			return errors.New("splat needs an array value")
		}
	default:
		return fmt.Errorf("unknown action %q", rw.Action)
	}
	switch rw.Encoding {
	case "", EncodingAuto, EncodingBase64, EncodingText, EncodingJSON:
	default:
		return fmt.Errorf("unknown encoding %q", rw.Encoding)
	}
	switch rw.Form {
	case "", FormValue, FormText, FormBlock:
	default:
		return fmt.Errorf("unknown form %q", rw.Form)
	}
	if rw.Path == "" && (rw.Action == ActionDrop || rw.Form == FormBlock) {
		return errors.New("cannot drop the root or treat it as a block")
	}
	return nil
}

// match walks one buffer once and collects the values the rewrites name.
// Each depth keeps the rewrites whose path still matches, so a visit checks
// one component per candidate, not its whole path.
func (x *executor) match(targets []target, bi int, idx []int, paths []Path) []target {
	raw := x.bufs[bi].raw
	pending := map[int][]int{} // container offset -> indexes into targets awaiting End
	cands := [][]int{idx}      // cands[d]: rewrites matching the path down to depth d
	err := walkTrusted(raw, func(v *Visit) Step {
		d := len(v.Path)
		if v.Leave {
			for _, ti := range pending[v.Off] {
				targets[ti].end = v.End
			}
			delete(pending, v.Off)
			return Descend
		}
		var here []int
		if d == 0 {
			here = idx
		} else {
			for _, i := range cands[d-1] {
				if paths[i].Len() >= d && paths[i].matchAt(d-1, v.Path[d-1]) {
					here = append(here, i)
				}
			}
		}
		deeper := false
		for _, i := range here {
			p := paths[i]
			if d < p.Len() {
				deeper = true
				continue
			}
			t := target{rw: i, buf: bi, off: v.Off, end: v.End, kind: v.Kind, parent: v.Parent, keyOff: v.KeyOff, path: v.PathString()}
			if d > 0 {
				if v.Path[d-1].IsIndex() && d > 1 {
					t.lastKey = v.Path[d-2].KeyString()
				} else {
					t.lastKey = v.Path[d-1].KeyString()
				}
			}
			targets = append(targets, t)
			if t.end < 0 {
				pending[v.Off] = append(pending[v.Off], len(targets)-1)
			}
		}
		if !deeper {
			return SkipValue
		}
		if v.Kind == KindObject || v.Kind == KindArray {
			for len(cands) <= d {
				cands = append(cands, nil)
			}
			cands[d] = here
		}
		return Descend
	})
	if err != nil {
		x.fail("", fmt.Errorf("reading %s: %w", x.bufName(bi), err))
	}
	return targets
}

func (x *executor) bufName(bi int) string {
	b := x.bufs[bi]
	if b.carrier < 0 {
		return "result"
	}
	c := x.d.Carriers()[b.carrier]
	if c.Kind == CarrierText {
		return fmt.Sprintf("text block %d", c.Block)
	}
	return string(c.Kind)
}

// dropOverlaps keeps, in each buffer, the first of two rewrites that touch
// the same value or nest in each other, and reports the other.
func (x *executor) dropOverlaps(ts []target) []target {
	slices.SortStableFunc(ts, func(a, b target) int {
		if a.buf != b.buf {
			return a.buf - b.buf
		}
		if a.off != b.off {
			return a.off - b.off
		}
		return a.rw - b.rw
	})
	out := ts[:0]
	lastBuf, lastEnd := -1, -1
	for _, t := range ts {
		if t.buf == lastBuf && t.off < lastEnd {
			x.fail(x.rws[t.rw].Path, fmt.Errorf("%w: %s overlaps an earlier rewrite of this step", ErrOverlap, t.path))
			continue
		}
		out = append(out, t)
		lastBuf, lastEnd = t.buf, t.end
	}
	return out
}

// apply executes one rewrite on one value and queues its edit.
func (x *executor) apply(ctx context.Context, t *target) {
	rw := &x.rws[t.rw]
	b := &x.bufs[t.buf]
	val := b.raw[t.off:t.end]
	if rw.MinSize > 0 && len(val) < rw.MinSize {
		return
	}
	var with []byte
	var err error
	switch rw.Action {
	case ActionArtifact:
		if rw.Form == FormBlock {
			with, err = x.block(ctx, t)
		} else {
			with, err = x.artifact(ctx, t)
		}
	case ActionTruncate:
		with, err = x.truncate(ctx, t)
	case ActionReplace:
		if len(val) > storeOriginalOver {
			if _, _, err = x.put(ctx, t, val, encodingFor(rw.Encoding, t.kind), rw.MIME, ""); err != nil {
				break
			}
		}
		with = rw.Value
		if rw.Splat {
			if t.keyOff >= 0 {
				err = errors.New("splat needs an array element")
				break
			}
			v := gjson.ParseBytes(rw.Value)
			inner := strings.TrimSpace(v.Raw)
			with = []byte(strings.TrimSpace(inner[1 : len(inner)-1]))
			if len(with) == 0 {
				// An empty splat removes the element: do it as a drop.
				b.post = append(b.post, postOp{path: t.path, order: t.off})
				return
			}
		}
	case ActionDrop:
		if len(val) > storeOriginalOver {
			if _, _, err = x.put(ctx, t, val, encodingFor(rw.Encoding, t.kind), rw.MIME, ""); err != nil {
				break
			}
		}
		b.post = append(b.post, postOp{path: t.path, order: t.off})
		return
	}
	if err != nil {
		x.fail(t.path, err)
		return
	}
	b.edits = append(b.edits, Edit{Off: t.off, Len: t.end - t.off, With: with})
}

func encodingFor(enc Encoding, k Kind) Encoding {
	if enc == "" || enc == EncodingAuto {
		if k == KindString {
			return EncodingText
		}
		return EncodingJSON
	}
	return enc
}

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

func clip(s string) string {
	const max = 200
	if len(s) > max {
		return prefixRunes([]byte(s), max) + "…"
	}
	return s
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

func uriBase(uri string) string {
	if i := strings.LastIndexAny(uri, "/:"); i >= 0 && i+1 < len(uri) {
		return uri[i+1:]
	}
	return ""
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
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

// render splices every buffer and writes changed carriers back into the
// result.
func (x *executor) render() {
	var top []Edit
	resultBuf := -1
	for bi := range x.bufs {
		b := &x.bufs[bi]
		if b.carrier < 0 {
			resultBuf = bi
			continue
		}
		if len(b.edits) == 0 && len(b.post) == 0 {
			continue
		}
		out, err := x.spliceBuf(b)
		if err != nil {
			x.fail("", fmt.Errorf("%s: %w", x.bufName(bi), err))
			continue
		}
		c := x.d.Carriers()[b.carrier]
		var with []byte
		if c.Kind == CarrierText {
			with = jsonstr.Append(make([]byte, 0, len(out)+len(out)/8+2), out)
		} else {
			with = out
		}
		if c.Kind == CarrierRaw {
			x.out.raw, x.out.changed = with, true
			return
		}
		top = append(top, Edit{Off: c.Off, Len: c.End - c.Off, With: with})
	}
	if resultBuf >= 0 {
		b := &x.bufs[resultBuf]
		b.edits = append(b.edits, top...)
		out, err := x.spliceBuf(b)
		if err != nil {
			x.fail("", fmt.Errorf("result: %w", err))
			return
		}
		x.out.raw, x.out.changed = out, len(b.edits)+len(b.post) > 0
		return
	}
	if len(top) > 0 {
		out, err := Splice(x.d.Raw, top)
		if err != nil {
			x.fail("", fmt.Errorf("result: %w", err))
			return
		}
		x.out.raw, x.out.changed = out, true
	}
}

// spliceBuf applies a buffer's edits, then its post operations (drops in
// reverse document order, so earlier paths stay valid).
func (x *executor) spliceBuf(b *buffer) ([]byte, error) {
	out, err := Splice(b.raw, b.edits)
	if err != nil {
		return nil, err
	}
	if len(b.post) == 0 {
		return out, nil
	}
	if len(b.edits) == 0 {
		out = slices.Clone(out)
	}
	slices.SortStableFunc(b.post, func(a, c postOp) int { return c.order - a.order })
	for _, op := range b.post {
		if op.value == nil {
			out, err = sjson.DeleteBytes(out, op.path)
		} else {
			out, err = sjson.SetRawBytes(out, op.path, op.value)
		}
		if err != nil {
			return nil, fmt.Errorf("path %q: %w", op.path, err)
		}
	}
	return out, nil
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

func kindOf(mimeType string, enc Encoding) string {
	switch {
	case strings.HasPrefix(mimeType, "application/json"):
		return "JSON"
	case strings.HasPrefix(mimeType, "text/"), enc == EncodingText:
		return "Text"
	case strings.HasPrefix(mimeType, "image/"):
		return strings.ToUpper(strings.TrimPrefix(subtype(mimeType), "x-")) + " image"
	case strings.HasPrefix(mimeType, "audio/"):
		return strings.ToUpper(subtype(mimeType)) + " audio"
	case strings.HasPrefix(mimeType, "video/"):
		return strings.ToUpper(subtype(mimeType)) + " video"
	case mimeType == "application/pdf":
		return "PDF"
	}
	return "Binary content"
}

func subtype(m string) string {
	m, _, _ = strings.Cut(m, ";")
	_, s, _ := strings.Cut(m, "/")
	return s
}

func extOf(mimeType string) string {
	base, _, _ := strings.Cut(mimeType, ";")
	switch base {
	case "text/plain":
		return ".txt"
	case "application/json":
		return ".json"
	case "application/octet-stream", "":
		return ".bin"
	}
	if exts, _ := mime.ExtensionsByType(base); len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}

func defaultFilename(tool, key, ext string) string {
	name := tool
	if key != "" && key != tool {
		if name != "" {
			name += "-"
		}
		name += key
	}
	if name == "" {
		name = "artifact"
	}
	return sanitizeFilename(name) + ext
}

func sanitizeFilename(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r < 0x20 || r == 0x7f:
			return '_'
		}
		return r
	}, s)
}

// now is the engine's clock, replaceable in tests.
var now = time.Now
