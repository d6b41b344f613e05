package layers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

func init() {
	layer.Register(layer.NewInfo("guardrail",
		"final clamp of the whole observation to a character budget, structure preserved, everything cut stored",
		defaultGuardrail, func(o GuardrailOptions, _ layer.Resources) (layer.Layer, error) { return newGuardrail(o) }))
}

// GuardrailOptions tune the guardrail (docs/design.md, "The chain").
type GuardrailOptions struct {
	// MaxObservationChars is the budget of the whole result, in JSON
	// characters. Defaults to 50000.
	MaxObservationChars int `json:"max_observation_chars"`
	// MaxFieldChars is the most a single string keeps when the result is
	// clamped. Defaults to 10000.
	MaxFieldChars int `json:"max_field_chars"`
	// AutoArtifactThreshold: arrays and objects larger than this are cut
	// (their whole JSON stored as one artifact); smaller ones are kept
	// whole or left to the strings inside them. Defaults to 20000.
	AutoArtifactThreshold int `json:"auto_artifact_threshold"`
}

func defaultGuardrail() GuardrailOptions {
	return GuardrailOptions{MaxObservationChars: 50000, MaxFieldChars: 10000, AutoArtifactThreshold: 20000}
}

type guardrail struct{ o GuardrailOptions }

// minObservationChars is the least budget the guardrail takes, from config
// or from a client's view (engine.View.MaxObservationChars).
const minObservationChars = 2000

func newGuardrail(o GuardrailOptions) (*guardrail, error) {
	if o.MaxObservationChars < minObservationChars {
		return nil, fmt.Errorf("max_observation_chars must be at least %d, got %d", minObservationChars, o.MaxObservationChars)
	}
	if o.MaxFieldChars < 100 || o.MaxFieldChars > o.MaxObservationChars {
		return nil, fmt.Errorf("max_field_chars must be between 100 and max_observation_chars, got %d", o.MaxFieldChars)
	}
	if o.AutoArtifactThreshold < 0 {
		return nil, fmt.Errorf("auto_artifact_threshold must not be negative")
	}
	return &guardrail{o: o}, nil
}

// Clamps marks the guardrail for the engine's observation_clamped event.
func (l *guardrail) Clamps() {}

// markerChars is room left for the marker each cut adds.
const markerChars = 220

// Plan cuts the result to its budget. Each carrier gets a share of the
// budget in proportion to its size; inside a carrier the budget is shared
// out top-down (see clamp), so the cuts are disjoint and the JSON keeps its
// shape.
func (l *guardrail) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	if v := d.Call.View.MaxObservationChars; v > 0 && v < l.o.MaxObservationChars {
		// The client's budget is tighter than the configured one.
		o := l.o
		o.MaxObservationChars = max(v, minObservationChars)
		o.MaxFieldChars = min(o.MaxFieldChars, o.MaxObservationChars/2)
		o.AutoArtifactThreshold = min(o.AutoArtifactThreshold, o.MaxObservationChars)
		l = &guardrail{o: o}
	}
	if len(d.Raw) <= l.o.MaxObservationChars {
		return nil, nil
	}
	var out []layer.Rewrite
	carriers := d.Carriers()
	inCarriers := 0
	for _, c := range carriers {
		inCarriers += c.End - c.Off
	}
	envelope := len(d.Raw) - inCarriers
	budget := l.o.MaxObservationChars - envelope - markerChars
	// Many blocks (images left inline past the artifact cap) are cut as a
	// list: content keeps the blocks that fit, the rest is stored whole.
	blocksCut := false
	if rw, ok := l.cutBlocks(d); ok {
		out = append(out, rw)
		blocksCut = true
	}
	// The envelope itself may be too big: cut its long strings first.
	if d.IsMCP() && envelope > l.o.MaxObservationChars/4 {
		keep := l.o.MaxFieldChars
		err := walkStrings(ctx, d, keep+markerChars, func(s stringVisit) {
			if s.Target != layer.TargetResult || (blocksCut && strings.HasPrefix(s.Path, "content.")) {
				return
			}
			p := s.Path
			if s.Form == layer.FormBlock {
				p += ".text"
			}
			out = append(out, layer.Rewrite{Path: p, Target: layer.TargetResult, Action: layer.ActionTruncate, Keep: keep})
			budget += len(s.Body) - keep
		})
		if err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for i, c := range carriers {
		if duplicateCarrier(carriers, i) || (blocksCut && c.Kind == layer.CarrierText) {
			continue
		}
		span := c.End - c.Off
		share := budget * span / max(inCarriers, 1)
		// A text carrier is escaped in the result: scale to payload bytes.
		share = share * len(c.Payload) / max(span, 1)
		if share < 200 {
			share = 200
		}
		if len(c.Payload) <= share {
			continue
		}
		rws, err := l.clamp(ctx, c.Payload, share)
		if err != nil {
			return nil, err
		}
		for _, rw := range rws {
			if !seen[rw.Path] {
				seen[rw.Path] = true
				out = append(out, rw)
			}
		}
	}
	return out, nil
}

// cutBlocks returns a truncation of the content array when its blocks,
// even with their long strings cut, do not fit the budget: it keeps the
// longest prefix of whole blocks that fits, and the engine stores the
// whole array and puts a text block with the marker after them.
func (l *guardrail) cutBlocks(d *layer.Doc) (layer.Rewrite, bool) {
	blocks := d.Blocks()
	if !d.IsMCP() || len(blocks) < 2 {
		return layer.Rewrite{}, false
	}
	size := blocks[len(blocks)-1].End - blocks[0].Off
	rest := len(d.Raw) - size
	limit := l.o.MaxObservationChars - rest - 2*markerChars
	if rest > l.o.MaxObservationChars/2 {
		limit = l.o.MaxObservationChars / 2
	}
	// What the blocks would weigh once their long strings are cut.
	cutSize := 0
	for _, b := range blocks {
		cutSize += min(b.End-b.Off, l.o.MaxFieldChars+2*markerChars) + 1
	}
	if cutSize <= limit {
		return layer.Rewrite{}, false
	}
	keep, used := 0, 0
	for _, b := range blocks {
		if used += b.End - b.Off + 1; used > limit {
			break
		}
		keep++
	}
	return layer.Rewrite{Path: "content", Target: layer.TargetResult, Action: layer.ActionTruncate, Keep: keep}, true
}

// node is a value of a payload. Its children are listed only when the
// node must be cut (one shallow pass over its span), and its path is
// rendered only when a cut names it, so a document costs passes in
// proportion to the depth of the cuts, not to its number of values.
type node struct {
	parent   *node
	elem     jsonwalk.PathElem
	kind     jsonwalk.Kind
	off, end int
	children []*node
	listed   bool
}

func (n *node) size() int { return n.end - n.off }

// path renders the node's gjson path.
func (n *node) path() string {
	var elems []jsonwalk.PathElem
	for ; n != nil && n.parent != nil; n = n.parent {
		elems = append(elems, n.elem)
	}
	for i, j := 0, len(elems)-1; i < j; i, j = i+1, j-1 {
		elems[i], elems[j] = elems[j], elems[i]
	}
	return jsonwalk.FormatPath(elems)
}

// clamper cuts one payload.
type clamper struct {
	ctx context.Context
	o   GuardrailOptions
	p   []byte
	out []layer.Rewrite
	// ends maps each container's offset to its end, in offset order: one
	// pass builds it, so listing a node's children skips nested containers
	// in O(1) instead of scanning them, and a document costs linear time
	// however deep it nests.
	ends []span
	err  error
}

type span struct{ off, end int }

// clamp returns truncations that bring p within budget bytes.
func (l *guardrail) clamp(ctx context.Context, p []byte, budget int) ([]layer.Rewrite, error) {
	start := 0
	for start < len(p) && (p[start] == ' ' || p[start] == '\t' || p[start] == '\n' || p[start] == '\r') {
		start++
	}
	end := len(p)
	for end > start && (p[end-1] == ' ' || p[end-1] == '\t' || p[end-1] == '\n' || p[end-1] == '\r') {
		end--
	}
	if start == end {
		return nil, nil
	}
	c := &clamper{ctx: ctx, o: l.o, p: p}
	var open []int
	visits := 0
	_ = jsonwalk.WalkValidated(p, func(v *jsonwalk.Visit) jsonwalk.Step {
		if visits++; visits&4095 == 0 && ctx.Err() != nil {
			c.err = ctx.Err()
			return jsonwalk.Stop
		}
		if v.Kind != jsonwalk.KindObject && v.Kind != jsonwalk.KindArray {
			return jsonwalk.Descend
		}
		if v.Leave {
			c.ends[open[len(open)-1]].end = v.End
			open = open[:len(open)-1]
			return jsonwalk.Descend
		}
		open = append(open, len(c.ends))
		c.ends = append(c.ends, span{off: v.Off, end: -1})
		return jsonwalk.Descend
	})
	if c.err != nil {
		return nil, c.err
	}
	root := &node{off: start, end: end, kind: kindAt(p[start])}
	c.fit(root, budget)
	return c.out, c.err
}

func kindAt(b byte) jsonwalk.Kind {
	switch b {
	case '{':
		return jsonwalk.KindObject
	case '[':
		return jsonwalk.KindArray
	case '"':
		return jsonwalk.KindString
	case 't', 'f', 'n':
		return jsonwalk.KindLiteral
	}
	return jsonwalk.KindNumber
}

// endOf returns the end of the container at off.
func (c *clamper) endOf(off int) int {
	i := sort.Search(len(c.ends), func(i int) bool { return c.ends[i].off >= off })
	return c.ends[i].end
}

// kids lists n's children in one shallow pass over its own bytes.
func (c *clamper) kids(n *node) []*node {
	if n.listed {
		return n.children
	}
	n.listed = true
	p := c.p
	ws := func(i int) int {
		for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
			i++
		}
		return i
	}
	for i, idx := ws(n.off+1), 0; i < n.end && p[i] != '}' && p[i] != ']'; idx++ {
		elem := jsonwalk.PathElem{Index: idx}
		if n.kind == jsonwalk.KindObject {
			kend, _ := jsonwalk.StringEnd(p, i)
			elem = jsonwalk.PathElem{Key: p[i+1 : kend-1]}
			i = ws(ws(kend) + 1) // past the colon
		}
		off, end := i, 0
		switch p[i] {
		case '{', '[':
			end = c.endOf(off)
		case '"':
			end, _ = jsonwalk.StringEnd(p, off)
		default:
			end = off
			for end < n.end && !strings.ContainsRune(",]} \t\r\n", rune(p[end])) {
				end++
			}
		}
		n.children = append(n.children, &node{parent: n, elem: elem, kind: kindAt(p[off]), off: off, end: end})
		if i = ws(end); i < n.end && p[i] == ',' {
			i = ws(i + 1)
		}
	}
	return n.children
}

func (c *clamper) cut(n *node, keep int) {
	c.out = append(c.out, layer.Rewrite{Path: n.path(), Action: layer.ActionTruncate, Keep: max(keep, 0)})
}

// fit adds the cuts that bring n within budget.
func (c *clamper) fit(n *node, budget int) {
	if n.size() <= budget || c.err != nil {
		return
	}
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return
	}
	switch n.kind {
	case jsonwalk.KindString:
		c.cut(n, min(budget-markerChars, c.o.MaxFieldChars))
	case jsonwalk.KindArray:
		c.fitArray(n, budget)
	case jsonwalk.KindObject:
		c.fitObject(n, budget)
	}
}

// fitArray keeps the longest prefix of whole items that fits and stores the
// array; a lone huge item is cut inside instead.
func (c *clamper) fitArray(n *node, budget int) {
	kids := c.kids(n)
	if len(kids) == 1 && n.size() >= c.o.AutoArtifactThreshold {
		c.fit(kids[0], budget-2)
		return
	}
	if n.size() < c.o.AutoArtifactThreshold && n.parent != nil {
		for _, k := range kids {
			c.fit(k, budget/max(len(kids), 1))
		}
		return
	}
	used, keep := 2+markerChars, 0
	for _, k := range kids {
		if used+k.size()+1 > budget {
			break
		}
		used += k.size() + 1
		keep++
	}
	c.cut(n, keep)
}

// fitObject shares the budget out by water-filling: small members stay
// whole, big ones get an equal cap and are cut inside. When even that
// leaves too little per member, the object keeps a prefix of its members.
func (c *clamper) fitObject(n *node, budget int) {
	kids := c.kids(n)
	sizes := make([]int, len(kids))
	for i, k := range kids {
		sizes[i] = k.size() + 8 // key and punctuation, roughly
	}
	sorted := append([]int(nil), sizes...)
	sort.Ints(sorted)
	avail := budget - 2
	capSize := 0
	for i, s := range sorted {
		rest := len(sorted) - i
		if s*rest > avail {
			capSize = avail / rest
			break
		}
		avail -= s
		capSize = s
	}
	if capSize < 200 || n.size() >= c.o.AutoArtifactThreshold && capSize < 400 {
		used, keep := 2+markerChars, 0
		for _, s := range sizes {
			if used+s > budget {
				break
			}
			used += s
			keep++
		}
		c.cut(n, keep)
		return
	}
	for i, k := range kids {
		if sizes[i] > capSize {
			c.fit(k, capSize-8)
		}
	}
}

var (
	_ layer.Layer   = (*guardrail)(nil)
	_ layer.Clamper = (*guardrail)(nil)
)
