package layers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mcpx-dev/mcpx/engine"
)

func init() {
	engine.RegisterLayer(engine.LayerInfo{
		Name:     "guardrail",
		Summary:  "final clamp of the whole observation to a character budget, structure preserved, everything cut stored",
		Defaults: func() any { return defaultGuardrail() },
		New: func(opts json.RawMessage, r engine.Resources) (engine.Layer, error) {
			o := defaultGuardrail()
			if err := engine.DecodeOptions(opts, &o); err != nil {
				return nil, err
			}
			return newGuardrail(o)
		},
	})
}

// GuardrailOptions tune the guardrail (RFC 4.4 ObservationGuardrailConfig).
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

func newGuardrail(o GuardrailOptions) (*guardrail, error) {
	if o.MaxObservationChars < 2000 {
		return nil, fmt.Errorf("max_observation_chars must be at least 2000, got %d", o.MaxObservationChars)
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
func (l *guardrail) Plan(ctx context.Context, d *engine.Doc) ([]engine.Rewrite, error) {
	if len(d.Raw) <= l.o.MaxObservationChars {
		return nil, nil
	}
	var out []engine.Rewrite
	carriers := d.Carriers()
	inCarriers := 0
	for _, c := range carriers {
		inCarriers += c.End - c.Off
	}
	envelope := len(d.Raw) - inCarriers
	budget := l.o.MaxObservationChars - envelope - markerChars
	// The envelope itself may be too big: cut its long strings first.
	if d.IsMCP() && envelope > l.o.MaxObservationChars/4 {
		keep := l.o.MaxFieldChars
		walkStrings(d, keep+markerChars, func(s stringVisit) {
			if s.Target != engine.TargetResult {
				return
			}
			p := s.Path
			if s.Form == engine.FormBlock {
				p += ".text"
			}
			out = append(out, engine.Rewrite{Path: p, Target: engine.TargetResult, Action: engine.ActionTruncate, Keep: keep})
			budget += len(s.Body) - keep
		})
	}
	seen := map[string]bool{}
	for i, c := range carriers {
		if duplicateCarrier(carriers, i) {
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
		for _, rw := range l.clamp(c.Payload, share) {
			if !seen[rw.Path] {
				seen[rw.Path] = true
				out = append(out, rw)
			}
		}
	}
	return out, nil
}

// node is a value of a payload. Its children are listed only when the
// node must be cut (one shallow pass over its span), and its path is
// rendered only when a cut names it, so a document costs passes in
// proportion to the depth of the cuts, not to its number of values.
type node struct {
	parent   *node
	elem     engine.PathElem
	kind     engine.Kind
	off, end int
	children []*node
	listed   bool
}

func (n *node) size() int { return n.end - n.off }

// path renders the node's gjson path.
func (n *node) path() string {
	var elems []engine.PathElem
	for ; n != nil && n.parent != nil; n = n.parent {
		elems = append(elems, n.elem)
	}
	for i, j := 0, len(elems)-1; i < j; i, j = i+1, j-1 {
		elems[i], elems[j] = elems[j], elems[i]
	}
	return engine.FormatPath(elems)
}

// clamper cuts one payload.
type clamper struct {
	o   GuardrailOptions
	p   []byte
	out []engine.Rewrite
}

// clamp returns truncations that bring p within budget bytes.
func (l *guardrail) clamp(p []byte, budget int) []engine.Rewrite {
	start := 0
	for start < len(p) && (p[start] == ' ' || p[start] == '\t' || p[start] == '\n' || p[start] == '\r') {
		start++
	}
	end := len(p)
	for end > start && (p[end-1] == ' ' || p[end-1] == '\t' || p[end-1] == '\n' || p[end-1] == '\r') {
		end--
	}
	if start == end {
		return nil
	}
	root := &node{off: start, end: end, kind: kindAt(p[start])}
	c := &clamper{o: l.o, p: p}
	c.fit(root, budget)
	return c.out
}

func kindAt(b byte) engine.Kind {
	switch b {
	case '{':
		return engine.KindObject
	case '[':
		return engine.KindArray
	case '"':
		return engine.KindString
	case 't', 'f', 'n':
		return engine.KindLiteral
	}
	return engine.KindNumber
}

// kids lists n's children in one shallow pass over its span.
func (c *clamper) kids(n *node) []*node {
	if n.listed {
		return n.children
	}
	n.listed = true
	base := n.off
	_ = engine.WalkValidated(c.p[n.off:n.end], func(v *engine.Visit) engine.Step {
		switch {
		case len(v.Path) == 0:
			return engine.Descend
		case v.Leave:
			n.children[len(n.children)-1].end = base + v.End
			return engine.Descend
		}
		n.children = append(n.children, &node{parent: n, elem: v.Path[0], kind: v.Kind, off: base + v.Off, end: base + v.End})
		return engine.SkipValue
	})
	return n.children
}

func (c *clamper) cut(n *node, keep int) {
	c.out = append(c.out, engine.Rewrite{Path: n.path(), Action: engine.ActionTruncate, Keep: max(keep, 0)})
}

// fit adds the cuts that bring n within budget.
func (c *clamper) fit(n *node, budget int) {
	if n.size() <= budget {
		return
	}
	switch n.kind {
	case engine.KindString:
		c.cut(n, min(budget-markerChars, c.o.MaxFieldChars))
	case engine.KindArray:
		c.fitArray(n, budget)
	case engine.KindObject:
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
	_ engine.Layer   = (*guardrail)(nil)
	_ engine.Clamper = (*guardrail)(nil)
)
