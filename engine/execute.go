package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
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
	if (rw.Action == ActionArtifact || rw.Action == ActionTruncate) && rw.Form != FormBlock && isReplacement(b.raw, t) {
		return // an earlier layer already stored this value
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

// isReplacement reports whether the value is what an artifact rewrite put
// in place: {"artifact": {..., "uri": "mcpx://artifacts/..."}, "summary": ...}.
func isReplacement(raw []byte, t *target) bool {
	if t.kind != KindObject {
		return false
	}
	o, _, kind, ok := Member(raw, t.off, "artifact")
	if !ok || kind != KindObject {
		return false
	}
	uo, ue, kind, ok := Member(raw, o, "uri")
	return ok && kind == KindString && bytes.HasPrefix(raw[uo+1:ue-1], []byte(URIScheme))
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

// now is the engine's clock, replaceable in tests.
var now = time.Now
