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

// node is a value of a payload with its children's spans. Its path is
// rendered only when a cut names it: rendering every path of a document
// nested 10,000 deep would be quadratic.
type node struct {
	parent   *node
	elem     engine.PathElem
	kind     engine.Kind
	off, end int
	children []*node
}

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

func (n *node) size() int { return n.end - n.off }

// clamp returns truncations that bring p within budget bytes.
func (l *guardrail) clamp(p []byte, budget int) []engine.Rewrite {
	root := l.tree(p, budget)
	if root == nil {
		return nil
	}
	var out []engine.Rewrite
	l.fit(root, budget, &out)
	return out
}

// tree builds the nodes of p down to the depth where values fit easily;
// small values are not expanded.
func (l *guardrail) tree(p []byte, budget int) *node {
	var root *node
	var stack []*node
	_ = engine.Walk(p, func(v *engine.Visit) engine.Step {
		if v.Leave {
			n := stack[len(stack)-1]
			n.end = v.End
			stack = stack[:len(stack)-1]
			return engine.Descend
		}
		n := &node{kind: v.Kind, off: v.Off, end: v.End}
		if len(stack) == 0 {
			root = n
		} else {
			n.parent = stack[len(stack)-1]
			n.elem = v.Path[len(v.Path)-1]
			n.parent.children = append(n.parent.children, n)
		}
		if v.Kind == engine.KindObject || v.Kind == engine.KindArray {
			stack = append(stack, n)
			// Children are needed only while a value may need cutting;
			// walking on costs one pass, skipping costs one too.
			return engine.Descend
		}
		return engine.Descend
	})
	return root
}

// fit adds the cuts that bring n within budget.
func (l *guardrail) fit(n *node, budget int, out *[]engine.Rewrite) {
	if n.size() <= budget {
		return
	}
	switch n.kind {
	case engine.KindString:
		keep := min(budget-markerChars, l.o.MaxFieldChars)
		*out = append(*out, engine.Rewrite{Path: n.path(), Action: engine.ActionTruncate, Keep: max(keep, 0)})
	case engine.KindArray:
		l.fitArray(n, budget, out)
	case engine.KindObject:
		l.fitObject(n, budget, out)
	}
}

// fitArray keeps the longest prefix of whole items that fits and stores the
// array; a lone huge item is cut inside instead.
func (l *guardrail) fitArray(n *node, budget int, out *[]engine.Rewrite) {
	if len(n.children) == 1 && n.size() >= l.o.AutoArtifactThreshold {
		l.fit(n.children[0], budget-2, out)
		return
	}
	if n.size() < l.o.AutoArtifactThreshold && n.parent != nil {
		for _, c := range n.children {
			l.fit(c, budget/max(len(n.children), 1), out)
		}
		return
	}
	used, keep := 2+markerChars, 0
	for _, c := range n.children {
		if used+c.size()+1 > budget {
			break
		}
		used += c.size() + 1
		keep++
	}
	*out = append(*out, engine.Rewrite{Path: n.path(), Action: engine.ActionTruncate, Keep: keep})
}

// fitObject shares the budget out by water-filling: small members stay
// whole, big ones get an equal cap and are cut inside. When even that
// leaves too little per member, the object keeps a prefix of its members.
func (l *guardrail) fitObject(n *node, budget int, out *[]engine.Rewrite) {
	sizes := make([]int, len(n.children))
	for i, c := range n.children {
		sizes[i] = c.size() + 8 // key and punctuation, roughly
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
	if capSize < 200 || n.size() >= l.o.AutoArtifactThreshold && capSize < 400 {
		used, keep := 2+markerChars, 0
		for _, s := range sizes {
			if used+s > budget {
				break
			}
			used += s
			keep++
		}
		*out = append(*out, engine.Rewrite{Path: n.path(), Action: engine.ActionTruncate, Keep: keep})
		return
	}
	for i, c := range n.children {
		if sizes[i] > capSize {
			l.fit(c, capSize-8, out)
		}
	}
}

var (
	_ engine.Layer   = (*guardrail)(nil)
	_ engine.Clamper = (*guardrail)(nil)
)
