package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/inspect"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
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
	kind    jsonwalk.Kind
	parent  int
	keyOff  int
	path    string
	lastKey string
	// shaped is set when the value, streamed as plain base64, proved to
	// hold escapes, whitespace or the URL-safe alphabet: put decodes it
	// whole with its Base64Shape instead.
	shaped bool
}

// buffer is a document the step edits: a carrier's payload or the result.
type buffer struct {
	raw     []byte
	carrier int // index in Doc.Carriers(); -1 for the result itself
	edits   []jsonwalk.Edit
	// drops are the values removed from their container, by offset: a drop
	// is an edit of its container's separators, computed at render time so
	// that many drops in one array cost one pass over it.
	drops []dropAt
	// creates are replaces of paths that do not exist yet, run after the
	// splice.
	creates []createOp
}

// dropAt is a value to remove: its container and its own offset.
type dropAt struct{ parent, off int }

// createOp is a replace that creates its path.
type createOp struct {
	rw   int
	path jsonwalk.Path
}

// outcome is what a step produced.
type outcome struct {
	raw       []byte
	artifacts []ArtifactRef
	errs      []error
	changed   bool
	// stored lists the originals that replace and drop kept, for the
	// result's references.
	stored []storedOriginal
	// capped counts artifact rewrites skipped for MaxArtifactsPerResult.
	capped int
	// views are the content blocks stored in block form, whose full refs
	// the result lists in _meta (annotate.go).
	views []blockRef
}

// storedOriginal is a replaced or dropped value kept in the store.
type storedOriginal struct {
	Path    string       `json:"path"`
	Action  layer.Action `json:"action"`
	Ref     ArtifactRef  `json:"artifact"`
	Summary string       `json:"summary"`
}

// stepLimits are what the rest of the call allows a step.
type stepLimits struct {
	// artifacts is how many more artifacts artifact and truncate rewrites
	// may store; -1 is no limit (the guardrail, which must cut).
	artifacts int
	// minted are the artifact ids stored earlier in this call: the only
	// refs a replace value may carry.
	minted map[string]bool
}

type executor struct {
	e     *Engine
	d     *layer.Doc
	step  string
	rws   []layer.Rewrite
	paths []jsonwalk.Path
	lim   stepLimits
	bufs  []buffer
	out   outcome
	// done maps a value already stored in this step (same rewrite, same
	// bytes in another carrier) to its ref.
	done map[string]stored
	// members caches the siblings of values that templates look up.
	members map[[2]int]jsonwalk.Object
}

type stored struct {
	ref     ArtifactRef
	val     []byte
	content *inspect.Summary
}

func (x *executor) fail(path string, err error) {
	x.out.errs = append(x.out.errs, &RewriteError{Step: x.step, Path: path, Err: err})
}

// execute runs one step's rewrites against d and returns the new result.
// Every rewrite is validated first: one invalid rewrite fails the step and
// none of its rewrites applies.
func (e *Engine) execute(ctx context.Context, d *layer.Doc, step string, rws []layer.Rewrite, lim stepLimits) outcome {
	x := &executor{e: e, d: d, step: step, rws: rws, lim: lim, done: map[string]stored{}}
	x.out.raw = d.Raw
	if len(rws) == 0 {
		return x.out
	}
	x.paths = make([]jsonwalk.Path, len(rws))
	for i := range rws {
		p, err := x.validate(&rws[i])
		if err != nil {
			x.fail(rws[i].Path, fmt.Errorf("%w: %w", ErrBadRewrite, err))
			continue
		}
		x.paths[i] = p
	}
	if len(x.out.errs) > 0 {
		x.out.errs = append(x.out.errs, &RewriteError{Step: step, Err: fmt.Errorf("%w: none of the step's %d rewrites applied", ErrBadRewrite, len(rws))})
		return x.out
	}
	var payload, result []int
	// Layers that walk several carriers may ask for one path twice.
	seen := make(map[string]bool, len(rws))
	for i := range rws {
		rw := &rws[i]
		key := string(rw.Target) + "\x00" + rw.Path + "\x00" + string(rw.Action) + "\x00" + string(rw.Form)
		if seen[key] {
			continue
		}
		seen[key] = true
		if rw.Target == layer.TargetResult && d.IsMCP() {
			result = append(result, i)
		} else {
			payload = append(payload, i)
		}
	}
	var targets []target
	if len(payload) > 0 {
		carriers := d.Carriers()
		for ci, c := range carriers {
			idx := payload
			if ci > 0 && !bytes.Equal(c.Payload, carriers[0].Payload) {
				// A replacement of the whole payload was made from the
				// first carrier: a carrier that holds another payload
				// keeps its own.
				idx = slices.DeleteFunc(slices.Clone(payload), func(i int) bool {
					return rws[i].Action == layer.ActionReplace && x.paths[i].Len() == 0
				})
			}
			x.bufs = append(x.bufs, buffer{raw: c.Payload, carrier: ci})
			targets = x.match(ctx, targets, len(x.bufs)-1, idx)
		}
	}
	if len(result) > 0 {
		x.bufs = append(x.bufs, buffer{raw: d.Raw, carrier: -1})
		targets = x.match(ctx, targets, len(x.bufs)-1, result)
	}
	// Replace may create a path that matched nowhere.
	matched := make([]bool, len(rws))
	for _, t := range targets {
		matched[t.rw] = true
	}
	creates := 0
	for _, i := range append(slices.Clone(payload), result...) {
		rw := &rws[i]
		if matched[i] || rw.Action != layer.ActionReplace || x.paths[i].HasWildcard() || rw.Splat {
			continue
		}
		if creates++; creates > maxCreatesPerStep {
			x.fail(rw.Path, fmt.Errorf("%w: more than %d replaces of one step create their path", ErrLimit, maxCreatesPerStep))
			continue
		}
		for bi := range x.bufs {
			if (rw.Target == layer.TargetResult && d.IsMCP()) == (x.bufs[bi].carrier < 0) {
				x.bufs[bi].creates = append(x.bufs[bi].creates, createOp{rw: i, path: x.paths[i]})
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

// validate checks one rewrite against the rules that need the document
// and the call: the whole result and its isError are the upstream's, and a
// replace value may name only artifacts this call stored.
func (x *executor) validate(rw *layer.Rewrite) (jsonwalk.Path, error) {
	if err := rw.Validate(); err != nil {
		return jsonwalk.Path{}, err
	}
	p, _ := jsonwalk.ParsePath(rw.Path)
	if rw.Target == layer.TargetResult && x.d.IsMCP() {
		if p.Len() == 0 {
			return jsonwalk.Path{}, errors.New("cannot rewrite the whole result (address the payload, or a member of the result)")
		}
		if key, wildcard := p.Comp(0); wildcard || key == "isError" {
			return jsonwalk.Path{}, errors.New("isError is the upstream's: a rewrite cannot change or drop it")
		}
	}
	if rw.Action == layer.ActionReplace {
		if id, ok := x.foreignRef(rw.Value); ok {
			return jsonwalk.Path{}, fmt.Errorf("replace value names artifact %q, which this call did not store", id)
		}
	}
	return p, nil
}

// foreignRef finds an artifact id in v that the call did not mint: in an
// {"artifact": {"id": ...}} object or an mcpx://artifacts/ URI.
func (x *executor) foreignRef(v []byte) (string, bool) {
	var bad string
	_ = jsonwalk.WalkValidated(v, func(vis *jsonwalk.Visit) jsonwalk.Step {
		if vis.Leave || vis.Kind != jsonwalk.KindString {
			return jsonwalk.Descend
		}
		body := v[vis.Off+1 : vis.End-1]
		var ids []string
		if n := len(vis.Path); n >= 2 && vis.Path[n-1].KeyIs("id") && vis.Path[n-2].KeyIs("artifact") {
			if s, err := jsonwalk.UnescapeString(body); err == nil {
				ids = append(ids, s)
			}
		}
		if bytes.Contains(body, []byte("artifacts")) {
			s, _ := jsonwalk.UnescapeString(body)
			for rest := s; ; {
				i := strings.Index(rest, URIScheme)
				if i < 0 {
					break
				}
				rest = rest[i+len(URIScheme):]
				j := strings.IndexFunc(rest, func(r rune) bool {
					return !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
				})
				if j < 0 {
					j = len(rest)
				}
				ids = append(ids, rest[:j])
			}
		}
		for _, id := range ids {
			// A ref the upstream sent (an mcpx behind this one) is the
			// upstream's to pass on; any other must be this call's.
			if !x.lim.minted[id] && !bytes.Contains(x.d.Raw, []byte(id)) {
				bad = id
				return jsonwalk.Stop
			}
		}
		return jsonwalk.Descend
	})
	return bad, bad != ""
}

// match walks one buffer once and collects the values the rewrites name.
// Each depth keeps the rewrites whose path still matches, so a visit checks
// one component per candidate, not its whole path; a container with many
// candidates indexes them by component, so 10,000 rewrites of
// "content.N" cost one lookup per element, not 10,000 comparisons.
func (x *executor) match(ctx context.Context, targets []target, bi int, idx []int) []target {
	raw := x.bufs[bi].raw
	paths := x.paths
	pending := map[int][]int{} // container offset -> indexes into targets awaiting End
	cands := []candSet{{all: idx}}
	visits := 0
	var ctxErr error
	err := jsonwalk.WalkValidated(raw, func(v *jsonwalk.Visit) jsonwalk.Step {
		d := len(v.Path)
		if v.Leave {
			for _, ti := range pending[v.Off] {
				targets[ti].end = v.End
			}
			delete(pending, v.Off)
			return jsonwalk.Descend
		}
		if visits++; visits&4095 == 0 {
			if ctxErr = ctx.Err(); ctxErr != nil {
				return jsonwalk.Stop
			}
		}
		var here []int
		if d == 0 {
			here = idx
		} else {
			here = cands[d-1].matching(paths, d-1, v.Path[d-1])
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
			return jsonwalk.SkipValue
		}
		if v.Kind == jsonwalk.KindObject || v.Kind == jsonwalk.KindArray {
			for len(cands) <= d {
				cands = append(cands, candSet{})
			}
			cands[d] = candSet{all: here}
		}
		return jsonwalk.Descend
	})
	if ctxErr != nil {
		x.fail("", ctxErr)
	}
	if err != nil {
		x.fail("", fmt.Errorf("reading %s: %w", x.bufName(bi), err))
	}
	return targets
}

// candSet are the rewrites whose paths match down to a container; the
// container's children are matched against component d of each.
type candSet struct {
	all []int
	// Built on the first child when all is long: rewrites by the literal
	// component they want next, and those with a wildcard there.
	indexed bool
	byKey   map[string][]int
	wild    []int
}

// candIndexOver is the candidate count past which a container indexes them.
const candIndexOver = 8

// matching returns the candidates whose component d matches e.
func (c *candSet) matching(paths []jsonwalk.Path, d int, e jsonwalk.PathElem) []int {
	if len(c.all) > candIndexOver {
		if !c.indexed {
			c.indexed = true
			c.byKey = make(map[string][]int, len(c.all))
			for _, i := range c.all {
				if paths[i].Len() <= d {
					continue
				}
				if key, wildcard := paths[i].Comp(d); wildcard {
					c.wild = append(c.wild, i)
				} else {
					c.byKey[key] = append(c.byKey[key], i)
				}
			}
		}
		var k string
		if e.IsIndex() {
			k = strconv.Itoa(e.Index)
		} else {
			k = e.KeyString()
		}
		lit := c.byKey[k]
		if len(c.wild) == 0 {
			return lit
		}
		return append(slices.Clone(lit), c.wild...)
	}
	var here []int
	for _, i := range c.all {
		if paths[i].Len() > d && paths[i].MatchAt(d, e) {
			here = append(here, i)
		}
	}
	return here
}

func (x *executor) bufName(bi int) string {
	b := x.bufs[bi]
	if b.carrier < 0 {
		return "result"
	}
	c := x.d.Carriers()[b.carrier]
	if c.Kind == layer.CarrierText {
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
			x.fail(x.rws[t.rw].Path, fmt.Errorf("%w: %s overlaps an earlier rewrite of this step", jsonwalk.ErrOverlap, t.path))
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
	if rw.Action == layer.ActionArtifact || rw.Action == layer.ActionTruncate {
		if rw.Form != layer.FormBlock && isReplacement(b.raw, t) {
			return // an earlier layer already stored this value
		}
		// Past the cap a value stays in place: "artifact" on "arr.#" of
		// 2,000 numbers must not multiply the output by the size of a ref.
		if x.lim.artifacts >= 0 && len(x.out.artifacts) >= x.lim.artifacts {
			x.out.capped++
			return
		}
	}
	var with []byte
	var err error
	switch rw.Action {
	case layer.ActionArtifact:
		if rw.Form == layer.FormBlock {
			with, err = x.block(ctx, t)
		} else {
			with, err = x.artifact(ctx, t)
		}
	case layer.ActionTruncate:
		with, err = x.truncate(ctx, t)
	case layer.ActionReplace:
		if err = x.keepOriginal(ctx, t); err != nil {
			break
		}
		with = rw.Value
		if rw.Splat {
			if t.keyOff >= 0 {
				err = errors.New("splat needs an array element")
				break
			}
			inner := bytes.TrimSpace(rw.Value)
			with = bytes.TrimSpace(inner[1 : len(inner)-1])
			if len(with) == 0 {
				// An empty splat removes the element: a drop.
				b.drops = append(b.drops, dropAt{parent: t.parent, off: t.off})
				return
			}
		}
	case layer.ActionDrop:
		if err = x.keepOriginal(ctx, t); err != nil {
			break
		}
		b.drops = append(b.drops, dropAt{parent: t.parent, off: t.off})
		return
	}
	if err != nil {
		x.fail(t.path, err)
		return
	}
	b.edits = append(b.edits, jsonwalk.Edit{Off: t.off, Len: t.end - t.off, With: with})
}

// keepOriginal stores a value that replace or drop removes when it is over
// storeOriginalOver, with the rewrite's filename and summary, and records
// it for the result's references.
func (x *executor) keepOriginal(ctx context.Context, t *target) error {
	rw := &x.rws[t.rw]
	val := x.bufs[t.buf].raw[t.off:t.end]
	if len(val) <= storeOriginalOver {
		return nil
	}
	ref, vars, err := x.put(ctx, t, val, encodingFor(rw.Encoding, t.kind), rw.MIME, rw.Filename)
	if err != nil {
		return fmt.Errorf("keeping the original: %w", err)
	}
	for _, s := range x.out.stored {
		if s.Ref.ID == ref.ID && s.Path == t.path {
			return nil // the same value in another carrier
		}
	}
	x.out.stored = append(x.out.stored, storedOriginal{Path: t.path, Action: rw.Action, Ref: ref, Summary: x.summary(rw, vars)})
	return nil
}

// isReplacement reports whether the value is what an artifact rewrite put
// in place: {"artifact": {..., "uri": "mcpx://artifacts/..."}, "summary": ...}.
func isReplacement(raw []byte, t *target) bool {
	if t.kind != jsonwalk.KindObject {
		return false
	}
	art, ok := jsonwalk.Member(raw, t.off, "artifact")
	if !ok || art.Kind != jsonwalk.KindObject {
		return false
	}
	uri, ok := jsonwalk.Member(raw, art.Off, "uri")
	return ok && uri.Kind == jsonwalk.KindString && bytes.HasPrefix(raw[uri.Off+1:uri.End-1], []byte(URIScheme))
}

func encodingFor(enc layer.Encoding, k jsonwalk.Kind) layer.Encoding {
	if enc == "" || enc == layer.EncodingAuto {
		if k == jsonwalk.KindString {
			return layer.EncodingText
		}
		return layer.EncodingJSON
	}
	return enc
}

// render splices every buffer and writes changed carriers back into the
// result.
func (x *executor) render() {
	var top []jsonwalk.Edit
	resultBuf := -1
	for bi := range x.bufs {
		b := &x.bufs[bi]
		if b.carrier < 0 {
			resultBuf = bi
			continue
		}
		if len(b.edits) == 0 && len(b.drops) == 0 && len(b.creates) == 0 {
			continue
		}
		out, err := x.spliceBuf(b)
		if err != nil {
			x.fail("", fmt.Errorf("%s: %w", x.bufName(bi), err))
			continue
		}
		c := x.d.Carriers()[b.carrier]
		var with []byte
		if c.Kind == layer.CarrierText {
			with = jsonstr.Append(make([]byte, 0, len(out)+len(out)/8+2), out)
		} else {
			with = out
		}
		if c.Kind == layer.CarrierRaw {
			x.out.raw, x.out.changed = with, true
			return
		}
		top = append(top, jsonwalk.Edit{Off: c.Off, Len: c.End - c.Off, With: with})
	}
	if resultBuf >= 0 {
		b := &x.bufs[resultBuf]
		b.edits = append(b.edits, top...)
		out, err := x.spliceBuf(b)
		if err != nil {
			x.fail("", fmt.Errorf("result: %w", err))
			return
		}
		x.out.raw, x.out.changed = out, len(b.edits)+len(b.drops)+len(b.creates) > 0
		return
	}
	if len(top) > 0 {
		out, err := jsonwalk.Splice(x.d.Raw, top)
		if err != nil {
			x.fail("", fmt.Errorf("result: %w", err))
			return
		}
		x.out.raw, x.out.changed = out, true
	}
}

// spliceBuf applies a buffer's edits and drops in one splice, then
// creates the paths of its creating replaces.
func (x *executor) spliceBuf(b *buffer) ([]byte, error) {
	eds := b.edits
	if len(b.drops) > 0 {
		eds = append(slices.Clone(eds), dropEdits(b.raw, b.drops)...)
	}
	out, err := jsonwalk.Splice(b.raw, eds)
	if err != nil {
		return nil, err
	}
	for _, c := range b.creates {
		rw := &x.rws[c.rw]
		next, err := createPath(out, c.path, rw.Value)
		if err != nil {
			// The path cannot be made here; the value it names does not
			// exist, so nothing is lost by skipping it.
			x.fail(rw.Path, err)
			continue
		}
		out = next
	}
	return out, nil
}

// now is the engine's clock, replaceable in tests.
var now = time.Now
