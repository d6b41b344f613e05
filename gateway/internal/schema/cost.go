package schema

// Bounding what validating against an upstream's outputSchema costs.
// jsonschema-go validates by plain recursion with no bound on depth or
// work: a $ref that reaches itself without descending into the value
// recurses until Go's stack overflows (fatal: no recover catches it), and
// anyOf branches that fan out through $refs check one value against
// exponentially many subschemas (45 s and 7 GB for eight levels of five).
// So each schema is analysed once, when compiled: cycles that do not
// descend are refused, and so is a schema that checks one value against
// more than Limits.MaxSchemaNodes subschemas. Before each validation a
// walk over the instance adds up the validator's work and nesting and
// refuses past Limits.MaxSchemaWork and Limits.MaxSchemaDepth. The walk
// follows the library's recursion and over-approximates it where that is
// simpler (every branch of anyOf, if, then and else counted, items and
// additionalItems counted for every item).

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// Errors of the schema analysis; Validate wraps them in
// engine.ErrSchemaNotChecked.
var (
	// ErrCycle is a $ref cycle that does not descend into the value:
	// validating with it never ends.
	ErrCycle = errors.New("outputSchema has a $ref cycle that does not descend into the value")
	// ErrTooCostly is a schema or a result past the validation
	// limits (Limits.MaxSchemaNodes, MaxSchemaWork, MaxSchemaDepth).
	ErrTooCostly = errors.New("validating against the outputSchema is over its limits")
	// errSchemaRef is a reference the analysis cannot follow.
	errSchemaRef = errors.New("outputSchema reference not understood")
)

// schemaWorkBytes is how many bytes of a value add one unit of work to
// each subschema applied to it: a failing check formats the value into
// its error.
const schemaWorkBytes = 16

// schemaCost is what the analysis of one resolved schema keeps.
type schemaCost struct {
	root *jsonschema.Schema
	// inPlace lists the subschemas each schema applies to the same value:
	// its $ref and $dynamicRef targets, allOf, anyOf, oneOf, not, if,
	// then, else and dependent schemas.
	inPlace map[*jsonschema.Schema][]*jsonschema.Schema
	// nodes is how many schemas one value is checked against when s is
	// applied to it, s included, with multiplicity (capped past the limit).
	nodes map[*jsonschema.Schema]int64
	// enums is the enum values the same schemas compare a value with
	// (capped past the work limit).
	enums map[*jsonschema.Schema]int64
	// chain is the longest run of nested validator calls on one value.
	chain    map[*jsonschema.Schema]int
	patterns map[*jsonschema.Schema][]*regexp.Regexp // patternProperties, compiled
	// descends marks the schemas with keywords that apply to members or
	// items.
	descends map[*jsonschema.Schema]bool
	limits   config.Limits
}

// schemaFields are the fields of jsonschema.Schema that hold subschemas,
// by keyword. Found by reflection on the first schema analysed, not at
// init: every mcpx process would pay for it (BENCHMARKS.md, "Start-up").
var schemaFields = sync.OnceValue(func() map[string][]int {
	t := reflect.TypeFor[jsonschema.Schema]()
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Type {
		case reflect.TypeFor[*jsonschema.Schema](), reflect.TypeFor[[]*jsonschema.Schema](), reflect.TypeFor[map[string]*jsonschema.Schema]():
		default:
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Name {
		case "Items", "ItemsArray":
			name = "items"
		case "DependencySchemas":
			name = "dependencies"
		}
		if name != "" && name != "-" {
			out[name] = append(out[name], i)
		}
	}
	return out
})

// inPlaceKeywords apply their subschemas to the value itself.
var inPlaceKeywords = []string{"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"}

// subschemas returns the subschemas s holds under keyword.
func subschemas(s *jsonschema.Schema, keyword string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	v := reflect.ValueOf(s).Elem()
	for _, i := range schemaFields()[keyword] {
		switch f := v.Field(i).Interface().(type) {
		case *jsonschema.Schema:
			if f != nil {
				out = append(out, f)
			}
		case []*jsonschema.Schema:
			out = append(out, f...)
		case map[string]*jsonschema.Schema:
			for _, c := range f {
				out = append(out, c)
			}
		}
	}
	return out
}

// children returns every subschema s holds, $defs included.
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for kw := range schemaFields() {
		out = append(out, subschemas(s, kw)...)
	}
	return out
}

// analyseSchema builds the cost model of root, a schema that resolved, and
// refuses it when it loops without descending or fans out past
// l.MaxSchemaNodes or nests past l.MaxSchemaDepth. l has its defaults.
func analyseSchema(root *jsonschema.Schema, l config.Limits) (*schemaCost, error) {
	c := &schemaCost{
		root: root, limits: l,
		inPlace:  map[*jsonschema.Schema][]*jsonschema.Schema{},
		nodes:    map[*jsonschema.Schema]int64{},
		enums:    map[*jsonschema.Schema]int64{},
		chain:    map[*jsonschema.Schema]int{},
		patterns: map[*jsonschema.Schema][]*regexp.Regexp{},
		descends: map[*jsonschema.Schema]bool{},
	}
	refs, err := indexSchema(root)
	if err != nil {
		return nil, err
	}
	all := refs.order
	for _, s := range all {
		var in []*jsonschema.Schema
		if s.Ref != "" {
			t, err := refs.resolve(s, s.Ref)
			if err != nil {
				return nil, err
			}
			in = append(in, t)
		}
		if s.DynamicRef != "" {
			// Resolved at validation time to any schema with that dynamic
			// anchor: count them all.
			if t, err := refs.resolve(s, s.DynamicRef); err == nil {
				in = append(in, t)
			} else if !errors.Is(err, errSchemaRef) {
				return nil, err
			}
			if u, err := url.Parse(s.DynamicRef); err == nil && u.Fragment != "" {
				in = append(in, refs.dynamic[u.Fragment]...)
			}
		}
		for _, kw := range inPlaceKeywords {
			in = append(in, subschemas(s, kw)...)
		}
		c.inPlace[s] = in
		for pat := range s.PatternProperties {
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, fmt.Errorf("outputSchema patternProperties %q: %w", pat, err)
			}
			c.patterns[s] = append(c.patterns[s], re)
		}
		c.descends[s] = s.Properties != nil || s.PatternProperties != nil || s.AdditionalProperties != nil ||
			s.PropertyNames != nil || s.UnevaluatedProperties != nil || s.Items != nil || s.ItemsArray != nil ||
			s.PrefixItems != nil || s.AdditionalItems != nil || s.Contains != nil || s.UnevaluatedItems != nil
	}
	// Depth-first over the in-place edges: a schema met again while still
	// on the path is a cycle.
	onPath := map[*jsonschema.Schema]bool{}
	var visit func(s *jsonschema.Schema, depth int) error
	visit = func(s *jsonschema.Schema, depth int) error {
		if _, done := c.nodes[s]; done {
			return nil
		}
		if onPath[s] {
			return fmt.Errorf("%w (through %s)", ErrCycle, schemaName(s))
		}
		if depth > l.MaxSchemaDepth {
			return fmt.Errorf("%w: more than %d nested subschemas on one value (limits.max_schema_depth)", ErrTooCostly, l.MaxSchemaDepth)
		}
		onPath[s] = true
		n, enums, chain := int64(1), int64(len(s.Enum)), 0
		for _, t := range c.inPlace[s] {
			if err := visit(t, depth+1); err != nil {
				return err
			}
			n = min(n+c.nodes[t], int64(l.MaxSchemaNodes)+1)
			enums = min(enums+c.enums[t], l.MaxSchemaWork+1)
			chain = max(chain, c.chain[t])
		}
		onPath[s] = false
		c.nodes[s], c.enums[s], c.chain[s] = n, enums, chain+1
		return nil
	}
	for _, s := range all {
		if err := visit(s, 0); err != nil {
			return nil, err
		}
		if c.nodes[s] > int64(l.MaxSchemaNodes) {
			return nil, fmt.Errorf("%w: one value is checked against more than %d subschemas (limits.max_schema_nodes)", ErrTooCostly, l.MaxSchemaNodes)
		}
	}
	return c, nil
}

func schemaName(s *jsonschema.Schema) string {
	switch {
	case s.Ref != "":
		return "$ref " + strconv.Quote(s.Ref)
	case s.DynamicRef != "":
		return "$dynamicRef " + strconv.Quote(s.DynamicRef)
	}
	return s.String()
}

// schemaRefs resolves references the way jsonschema-go does (without
// remote loading, as the gateway resolves): URIs from $id, anchors per
// base, JSON pointers over keywords.
type schemaRefs struct {
	order   []*jsonschema.Schema // every schema, preorder
	base    map[*jsonschema.Schema]*jsonschema.Schema
	uri     map[*jsonschema.Schema]*url.URL // of the schemas that are bases
	byURI   map[string]*jsonschema.Schema
	anchors map[*jsonschema.Schema]map[string]*jsonschema.Schema
	dynamic map[string][]*jsonschema.Schema // by $dynamicAnchor name
}

func indexSchema(root *jsonschema.Schema) (*schemaRefs, error) {
	r := &schemaRefs{
		base: map[*jsonschema.Schema]*jsonschema.Schema{}, uri: map[*jsonschema.Schema]*url.URL{},
		byURI: map[string]*jsonschema.Schema{}, anchors: map[*jsonschema.Schema]map[string]*jsonschema.Schema{},
		dynamic: map[string][]*jsonschema.Schema{},
	}
	draft7 := root.Schema == "http://json-schema.org/draft-07/schema#" || root.Schema == "https://json-schema.org/draft-07/schema#"
	r.uri[root] = &url.URL{}
	r.byURI[""] = root
	anchor := func(base *jsonschema.Schema, name string, s *jsonschema.Schema) {
		if r.anchors[base] == nil {
			r.anchors[base] = map[string]*jsonschema.Schema{}
		}
		r.anchors[base][name] = s
	}
	// An explicit stack: a schema nested 10,000 deep must not cost this
	// walk more than a slice.
	type item struct{ s, base *jsonschema.Schema }
	stack := []item{{root, root}}
	seen := map[*jsonschema.Schema]bool{}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		s, base := it.s, it.base
		if seen[s] { // Resolve refuses a schema that is not a tree
			return nil, fmt.Errorf("%w: a subschema appears twice", errSchemaRef)
		}
		seen[s] = true
		r.order = append(r.order, s)
		if s.ID != "" && !(draft7 && s.Ref != "") {
			id, err := url.Parse(s.ID)
			if err != nil {
				return nil, fmt.Errorf("%w: $id %q: %w", errSchemaRef, s.ID, err)
			}
			if draft7 && id.Fragment != "" {
				anchor(base, strings.TrimPrefix(s.ID, "#"), s)
			} else {
				u := r.uri[base].ResolveReference(id)
				r.uri[s] = u
				r.byURI[u.String()] = s
				base = s
			}
		}
		r.base[s] = base
		if !draft7 {
			if s.Anchor != "" {
				anchor(base, s.Anchor, s)
			}
			if s.DynamicAnchor != "" {
				anchor(base, s.DynamicAnchor, s)
				r.dynamic[s.DynamicAnchor] = append(r.dynamic[s.DynamicAnchor], s)
			}
		}
		for _, c := range children(s) {
			stack = append(stack, item{c, base})
		}
	}
	return r, nil
}

// resolve returns the schema ref, written in s, refers to.
func (r *schemaRefs) resolve(s *jsonschema.Schema, ref string) (*jsonschema.Schema, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", errSchemaRef, ref, err)
	}
	full := r.uri[r.base[s]].ResolveReference(u)
	frag := full.Fragment
	full.Fragment, full.RawFragment = "", ""
	doc := r.byURI[full.String()]
	if doc == nil {
		return nil, fmt.Errorf("%w: %q is not in the schema", errSchemaRef, ref)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		if t := r.anchors[doc][frag]; t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("%w: no anchor %q", errSchemaRef, frag)
	}
	return pointTo(doc, frag)
}

// pointTo follows the JSON pointer ptr from s.
func pointTo(s *jsonschema.Schema, ptr string) (*jsonschema.Schema, error) {
	if ptr == "" {
		return s, nil
	}
	v := reflect.ValueOf(s)
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				return nil, fmt.Errorf("%w: %q", errSchemaRef, ptr)
			}
			var next reflect.Value
			for _, i := range schemaFields()[seg] {
				if f := v.Elem().Field(i); !f.IsNil() {
					next = f
					break
				}
			}
			if !next.IsValid() {
				return nil, fmt.Errorf("%w: %q", errSchemaRef, ptr)
			}
			v = next
		case reflect.Slice:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= v.Len() {
				return nil, fmt.Errorf("%w: %q", errSchemaRef, ptr)
			}
			v = v.Index(i)
		case reflect.Map:
			v = v.MapIndex(reflect.ValueOf(seg))
			if !v.IsValid() {
				return nil, fmt.Errorf("%w: %q", errSchemaRef, ptr)
			}
		}
	}
	if t, ok := v.Interface().(*jsonschema.Schema); ok && t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %q does not name a schema", errSchemaRef, ptr)
}

// checkWork walks instance as the validator will and refuses it when the
// work or the nesting goes past the limits.
func (c *schemaCost) checkWork(instance gjson.Result) error {
	w := &schemaWalk{cost: c}
	return w.value(instance, map[*jsonschema.Schema]int64{c.root: 1}, 0)
}

// checkDepth refuses depth nested validator calls past the limit.
func (c *schemaCost) checkDepth(depth int) error {
	if depth > c.limits.MaxSchemaDepth {
		return fmt.Errorf("%w: more than %d nested checks (limits.max_schema_depth)", ErrTooCostly, c.limits.MaxSchemaDepth)
	}
	return nil
}

type schemaWalk struct {
	cost *schemaCost
	work int64
}

// add counts m applications of s to a value of size bytes.
func (w *schemaWalk) add(s *jsonschema.Schema, m int64, size int) error {
	l := w.cost.limits
	w.work += m * (w.cost.nodes[s]*(1+int64(size)/schemaWorkBytes) + w.cost.enums[s])
	if w.work > l.MaxSchemaWork || w.work < 0 {
		return fmt.Errorf("%w: more than %d units of work for one result (limits.max_schema_work)", ErrTooCostly, l.MaxSchemaWork)
	}
	return nil
}

// value counts checking v against applied (schemas with multiplicity),
// at depth nested validator calls, and descends.
func (w *schemaWalk) value(v gjson.Result, applied map[*jsonschema.Schema]int64, depth int) error {
	c := w.cost
	// Every schema applied in place, with multiplicity, but only those
	// that descend are kept: the rest have been counted.
	here := map[*jsonschema.Schema]int64{}
	deepest := 0
	for s, m := range applied {
		if err := w.add(s, m, len(v.Raw)); err != nil {
			return err
		}
		deepest = max(deepest, c.chain[s])
		var expand func(t *jsonschema.Schema)
		expand = func(t *jsonschema.Schema) {
			if c.descends[t] {
				here[t] += m
			}
			for _, u := range c.inPlace[t] {
				expand(u)
			}
		}
		expand(s) // c.nodes[s] calls at most: counted above
	}
	depth += deepest
	if err := c.checkDepth(depth); err != nil {
		return err
	}
	if len(here) == 0 || (!v.IsObject() && !v.IsArray()) {
		return nil
	}
	var err error
	i := 0
	v.ForEach(func(k, item gjson.Result) bool {
		next := map[*jsonschema.Schema]int64{}
		put := func(s *jsonschema.Schema, m int64) {
			if s != nil {
				next[s] += m
			}
		}
		if v.IsObject() {
			key := k.String()
			for s, m := range here {
				p, known := s.Properties[key]
				put(p, m)
				for _, re := range c.patterns[s] {
					if re.MatchString(key) {
						put(s.PatternProperties[re.String()], m)
						known = true
					}
				}
				if !known {
					put(s.AdditionalProperties, m)
				}
				put(s.UnevaluatedProperties, m)
				if s.PropertyNames != nil {
					if err = w.add(s.PropertyNames, m, len(k.Raw)); err != nil {
						return false
					}
					if err = c.checkDepth(depth + c.chain[s.PropertyNames]); err != nil {
						return false
					}
				}
			}
		} else {
			for s, m := range here {
				if i < len(s.PrefixItems) {
					put(s.PrefixItems[i], m)
				}
				if i < len(s.ItemsArray) {
					put(s.ItemsArray[i], m)
				}
				put(s.Items, m)
				put(s.AdditionalItems, m)
				put(s.Contains, m)
				put(s.UnevaluatedItems, m)
			}
			i++
		}
		if len(next) > 0 {
			err = w.value(item, next, depth)
		}
		return err == nil
	})
	return err
}
