package engine

// Keeping results valid under the tool's outputSchema. Clients built on the
// TypeScript SDK validate structuredContent against outputSchema and reject
// the whole result on a mismatch, so after the chain every value an artifact
// rewrite replaced in structuredContent takes the type the schema gives it:
// a string where the schema wants a string (the summary with the
// mcpx://artifacts URI), the replacement object with the schema's required
// members where it wants an object. Then the SchemaValidator, when there is
// one, checks the whole structuredContent; what still fails falls back per
// Config.SchemaFallback.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

// SchemaValidator checks a tool's structuredContent against its
// outputSchema. Validate returns nil when instance is valid, and also when
// it cannot judge (an unsupported draft, a schema that does not compile):
// the engine then trusts its own type-keeping pass. It must be safe for
// concurrent use.
type SchemaValidator interface {
	Validate(schema, instance json.RawMessage) error
}

// The values of Config.SchemaFallback.
const (
	schemaFallbackPlaceholder = "placeholder"
	schemaFallbackKeep        = "keep"
)

// schemaStep names the schema pass in failures and logs.
const schemaStep = "schema"

// The type-keeping pass reads the upstream's schema itself, so a schema
// whose anyOf branches fan out through $refs, or one whose required
// members nest without end, must not buy it unbounded work:
// keeperMaxSchemas caps the subschemas gathered for one place in
// structuredContent, keeperMaxExpandDepth the $refs and branches followed
// from one subschema, keeperMaxPlaceholderValues the values of one
// placeholder and keeperMaxPlaceholderDepth its nesting.
const (
	keeperMaxSchemas           = 1024
	keeperMaxExpandDepth       = 16
	keeperMaxPlaceholderValues = 256
	keeperMaxPlaceholderDepth  = 32
)

// requiredFromOriginalMax caps the JSON size of a required member copied
// back from the original value: a larger one is what was offloaded.
const requiredFromOriginalMax = 1024

func checkSchemaFallback(v string) error {
	switch v {
	case schemaFallbackPlaceholder, schemaFallbackKeep:
		return nil
	}
	return fmt.Errorf("engine: schema_fallback %q: want %q or %q", v, schemaFallbackPlaceholder, schemaFallbackKeep)
}

// sameBytes reports whether a and b are the same slice of memory: the
// chain hands back its input untouched when nothing changed.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// scStep is one step of a path inside structuredContent.
type scStep struct {
	key   string
	index int // -1 for an object key
}

func (p scStep) String() string {
	if p.index >= 0 {
		return strconv.Itoa(p.index)
	}
	return p.key
}

func formatComps(comps []scStep) string {
	parts := make([]string, len(comps))
	for i, c := range comps {
		parts[i] = c.String()
	}
	return strings.Join(parts, ".")
}

// replaced is an artifact replacement found in structuredContent.
type replaced struct {
	comps    []scStep
	off, end int // in the structuredContent bytes
	value    gjson.Result
}

// keepSchema runs the type-keeping pass and the validation over the
// transformed result res.Raw of call c (orig is the untransformed result)
// and returns the result to send.
func (e *Engine) keepSchema(ctx context.Context, c Call, orig []byte, res *Result) []byte {
	out := res.Raw
	sc := gjson.GetBytes(out, "structuredContent")
	if (!sc.IsObject() && !sc.IsArray()) || sc.Index <= 0 {
		return out
	}
	schema := gjson.ParseBytes(c.OutputSchema)
	if !schema.IsObject() {
		return out
	}
	log := e.log.Named(schemaStep).With("server", c.Server, "tool", c.Tool)
	scRaw := []byte(sc.Raw)
	origSC := gjson.GetBytes(orig, "structuredContent")
	reps := findReplacements(gjson.Parse(sc.Raw), nil, nil)
	if len(reps) == 0 && e.validate == nil {
		return out
	}
	ks := keeper{root: schema, orig: origSC}
	var unfit []replaced
	var edits []jsonwalk.Edit
	for _, r := range reps {
		with, ok := ks.fit(r)
		if !ok {
			unfit = append(unfit, r)
			continue
		}
		if with != nil {
			edits = append(edits, jsonwalk.Edit{Off: r.off, Len: r.end - r.off, With: with})
		}
	}
	fallback := func(which []replaced, why error) ([]jsonwalk.Edit, []replaced) {
		var eds []jsonwalk.Edit
		var moved []replaced
		for _, r := range which {
			res.Failures = append(res.Failures, &RewriteError{Step: schemaStep, Path: "structuredContent." + formatComps(r.comps), Err: fmt.Errorf("%w: %w", ErrSchemaMismatch, why)})
			var with []byte
			if e.cfg.SchemaFallback == schemaFallbackKeep {
				if o := lookupComps(origSC, r.comps); o.Exists() {
					with = []byte(o.Raw)
				}
			}
			if with == nil {
				with = ks.placeholder(r.comps)
				moved = append(moved, r)
			}
			eds = append(eds, jsonwalk.Edit{Off: r.off, Len: r.end - r.off, With: with})
		}
		return eds, moved
	}
	var moved []replaced
	if len(unfit) > 0 {
		log.Warn("no rewrite fits the output schema; falling back", "fallback", e.cfg.SchemaFallback, "paths", pathsOf(unfit))
		eds, m := fallback(unfit, errors.New("the schema takes neither an object nor a string here"))
		edits, moved = append(edits, eds...), m
	}
	next, err := jsonwalk.Splice(scRaw, edits)
	if err != nil {
		log.Error("schema pass: splicing failed; result sent as the chain left it", "error", err)
		return out
	}
	if e.validate != nil {
		if verr := e.validate.Validate(c.OutputSchema, next); errors.Is(verr, ErrSchemaNotChecked) {
			// Validating again would cost as much: the fallback applies
			// as it stands.
			log.Warn("rewritten structuredContent not validated; falling back", "fallback", e.cfg.SchemaFallback, "error", verr, "paths", pathsOf(reps))
			eds, m := fallback(reps, verr)
			moved = m
			if next, err = jsonwalk.Splice(scRaw, eds); err != nil {
				log.Error("schema pass: splicing failed; result sent as the chain left it", "error", err)
				return out
			}
		} else if verr != nil {
			fitted := make([]replaced, 0, len(reps))
			for _, r := range reps {
				if !containsRep(unfit, r) {
					fitted = append(fitted, r)
				}
			}
			log.Warn("rewritten structuredContent fails the output schema; falling back", "fallback", e.cfg.SchemaFallback, "error", verr, "paths", pathsOf(fitted))
			eds, m := fallback(reps, verr)
			moved = m
			if next, err = jsonwalk.Splice(scRaw, eds); err != nil {
				log.Error("schema pass: splicing failed; result sent as the chain left it", "error", err)
				return out
			}
			if verr2 := e.validate.Validate(c.OutputSchema, next); verr2 != nil {
				if origSC.Exists() && e.validate.Validate(c.OutputSchema, json.RawMessage(origSC.Raw)) == nil {
					log.Error("structuredContent still fails the output schema after the fallback; sending the server's own structuredContent", "error", verr2)
					next, moved = []byte(origSC.Raw), nil
				} else {
					log.Warn("structuredContent fails the output schema, as the server's own did", "error", verr2)
				}
			}
		}
	}
	out, err = jsonwalk.Splice(out, []jsonwalk.Edit{{Off: sc.Index, Len: len(sc.Raw), With: next}})
	if err != nil {
		log.Error("schema pass: splicing failed; result sent as the chain left it", "error", err)
		return res.Raw
	}
	out = unlistGone(out, next, gjson.GetBytes(orig, "_meta").Exists())
	return addMovedRefs(out, moved, res.Artifacts, log)
}

// unlistGone removes from _meta["mcpx/artifacts"] the refs of values in
// structuredContent that the schema pass took out of sc, the new
// structuredContent (the server's value kept in their place, or a
// placeholder that addMovedRefs lists again), and the _meta it emptied
// when the upstream sent none.
func unlistGone(out, sc []byte, upstreamMeta bool) []byte {
	list := gjson.GetBytes(out, `_meta.mcpx/artifacts`)
	if !list.IsArray() {
		return out
	}
	var gone []int
	n := 0
	list.ForEach(func(_, v gjson.Result) bool {
		p := v.Get("path").String()
		if (p == "structuredContent" || strings.HasPrefix(p, "structuredContent.")) && !bytes.Contains(sc, []byte(v.Get("artifact.id").String())) {
			gone = append(gone, n)
		}
		n++
		return true
	})
	if len(gone) == 0 {
		return out
	}
	before := out
	var err error
	if len(gone) < n {
		for i := len(gone) - 1; i >= 0 && err == nil; i-- {
			out, err = sjson.DeleteBytes(out, `_meta.mcpx/artifacts.`+strconv.Itoa(gone[i]))
		}
	} else {
		out, err = sjson.DeleteBytes(out, `_meta.mcpx/artifacts`)
		if m := gjson.GetBytes(out, "_meta"); err == nil && !upstreamMeta && m.IsObject() && len(m.Map()) == 0 {
			out, err = sjson.DeleteBytes(out, "_meta")
		}
	}
	if err != nil { // paths that exist: cannot fail
		return before
	}
	return out
}

func containsRep(rs []replaced, r replaced) bool {
	for _, x := range rs {
		if x.off == r.off {
			return true
		}
	}
	return false
}

func pathsOf(rs []replaced) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = "structuredContent." + formatComps(r.comps)
	}
	return out
}

// addMovedRefs puts the reference of every value replaced by a placeholder
// where the model and the host still find it: a text block in content and
// an entry in _meta["mcpx/artifacts"] with the full ref (from full, the
// result's artifacts), unless the in-place ref's entry is there already.
func addMovedRefs(out []byte, moved []replaced, full []ArtifactRef, log interface{ Warn(string, ...any) }) []byte {
	for _, r := range moved {
		path := "structuredContent." + formatComps(r.comps)
		summary := r.value.Get("summary").String()
		block := []byte(`{"type":"text","text":`)
		block = jsonstr.AppendString(block, path+": "+summary)
		block = append(block, '}')
		id := r.value.Get("artifact.id").String()
		var err error
		if gjson.GetBytes(out, "content").IsArray() {
			out, err = sjson.SetRawBytes(out, "content.-1", block)
		} else {
			out, err = sjson.SetRawBytes(out, "content", append(append([]byte{'['}, block...), ']'))
		}
		if err == nil && !listedInMeta(out, path, id) {
			art := []byte(r.value.Get("artifact").Raw)
			for _, a := range full {
				if a.ID == id {
					art, _ = json.Marshal(a)
					break
				}
			}
			meta := []byte(`{"path":`)
			meta = jsonstr.AppendString(meta, path)
			meta = append(meta, `,"artifact":`...)
			meta = append(meta, art...)
			meta = append(meta, '}')
			out, err = sjson.SetRawBytes(out, `_meta.mcpx/artifacts.-1`, meta)
		}
		if err != nil {
			log.Warn("could not add the reference of a placeholder to content and _meta", "path", path, "error", err)
		}
	}
	return out
}

// listedInMeta reports whether _meta["mcpx/artifacts"] names artifact id
// at path.
func listedInMeta(out []byte, path, id string) bool {
	found := false
	gjson.GetBytes(out, `_meta.mcpx/artifacts`).ForEach(func(_, v gjson.Result) bool {
		found = v.Get("path").String() == path && v.Get("artifact.id").String() == id
		return !found
	})
	return found
}

// findReplacements collects the artifact replacements under v (offsets
// relative to the value parsed at the root).
func findReplacements(v gjson.Result, comps []scStep, out []replaced) []replaced {
	if !v.IsObject() && !v.IsArray() {
		return out
	}
	if v.IsObject() && isReplacementValue(v) {
		return append(out, replaced{comps: append([]scStep(nil), comps...), off: v.Index, end: v.Index + len(v.Raw), value: v})
	}
	i := 0
	v.ForEach(func(k, child gjson.Result) bool {
		comp := scStep{key: k.String(), index: -1}
		if v.IsArray() {
			comp = scStep{index: i}
		}
		i++
		out = findReplacements(child, append(comps, comp), out)
		return true
	})
	return out
}

// isReplacementValue reports whether v is {"artifact": {..., "uri":
// "mcpx://artifacts/..."}, "summary": "..."}, what an artifact rewrite puts
// in place.
func isReplacementValue(v gjson.Result) bool {
	a := v.Get("artifact")
	return a.IsObject() && strings.HasPrefix(a.Get("uri").String(), URIScheme) && v.Get("summary").Type == gjson.String
}

// lookupComps follows comps from v without building a gjson path, so keys
// with dots or wildcards need no escaping.
func lookupComps(v gjson.Result, comps []scStep) gjson.Result {
	for _, c := range comps {
		var next gjson.Result
		i := 0
		v.ForEach(func(k, child gjson.Result) bool {
			if (c.index >= 0 && v.IsArray() && i == c.index) || (c.index < 0 && v.IsObject() && k.String() == c.key) {
				next = child
				return false
			}
			i++
			return true
		})
		if !next.Exists() {
			return gjson.Result{}
		}
		v = next
	}
	return v
}

// keeper fits replacements to a schema.
type keeper struct {
	root gjson.Result // the outputSchema
	orig gjson.Result // the server's structuredContent
}

// fit returns what replaces r so that its type matches the schema: nil
// keeps r as it is; false means no rewrite fits.
func (k keeper) fit(r replaced) ([]byte, bool) {
	cands := k.at(r.comps)
	types, open := typesOf(cands)
	switch {
	case open || types["object"]:
		return k.withRequired(r, cands), true
	case types["string"]:
		return jsonstr.AppendString(nil, replacementText(r.value)), true
	}
	return nil, false
}

// replacementText is the string form of a replacement: its summary, which
// names the artifact, the URI when the summary lacks it, and the preview.
func replacementText(v gjson.Result) string {
	s := v.Get("summary").String()
	if uri := v.Get("artifact.uri").String(); !strings.Contains(s, uri) {
		s += " (" + uri + ")"
	}
	if p := v.Get("preview"); p.Exists() && p.String() != "" {
		s += "\nPreview:\n" + p.String()
	}
	return s
}

// withRequired adds to the replacement object the members the schema
// requires and it lacks: small ones from the original value, the rest as
// the replacement's text or a placeholder.
func (k keeper) withRequired(r replaced, cands []gjson.Result) []byte {
	var missing []string
	seen := map[string]bool{}
	for _, s := range cands {
		s.Get("required").ForEach(func(_, name gjson.Result) bool {
			n := name.String()
			if !seen[n] && !r.value.Get(gjsonKey(n)).Exists() {
				missing = append(missing, n)
			}
			seen[n] = true
			return true
		})
	}
	if len(missing) == 0 {
		return nil
	}
	orig := lookupComps(k.orig, r.comps)
	budget := keeperMaxPlaceholderValues
	out := bytes.TrimRight([]byte(r.value.Raw), " \t\r\n")
	out = append([]byte(nil), out[:len(out)-1]...) // drop the closing brace
	for _, name := range missing {
		child := append(append([]scStep(nil), r.comps...), scStep{key: name, index: -1})
		var val []byte
		childCands := k.step(cands, child[len(child)-1])
		if o := lookupComps(orig, []scStep{{key: name, index: -1}}); o.Exists() && len(o.Raw) <= requiredFromOriginalMax {
			val = []byte(o.Raw)
		} else if types, open := typesOf(childCands); open || types["string"] {
			val = jsonstr.AppendString(nil, replacementText(r.value))
		} else {
			val = k.placeholderOf(childCands, len(child), &budget)
		}
		out = append(out, ',')
		out = jsonstr.AppendString(out, name)
		out = append(out, ':')
		out = append(out, val...)
	}
	return append(out, '}')
}

// gjsonKey escapes a member name for a one-component gjson path.
func gjsonKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch r {
		case '.', '*', '?', '|', '#', '@', '\\', '!', '=', '<', '>', '%', ':':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// at returns the subschemas that apply at comps, every branch of
// allOf/anyOf/oneOf expanded and local $refs followed.
func (k keeper) at(comps []scStep) []gjson.Result {
	cur := k.expand(k.root, 0, map[int]bool{}, nil)
	for _, c := range comps {
		if cur = k.step(cur, c); len(cur) == 0 {
			return nil
		}
	}
	return cur
}

// step returns the subschemas that apply to member or item c of a value
// cur applies to, each once.
func (k keeper) step(cur []gjson.Result, c scStep) []gjson.Result {
	seen := map[int]bool{}
	var next []gjson.Result
	for _, s := range cur {
		for _, child := range childSchemas(s, c) {
			next = k.expand(child, 0, seen, next)
		}
	}
	return next
}

// childSchemas returns the schemas of member or item c of a value s
// describes.
func childSchemas(s gjson.Result, c scStep) []gjson.Result {
	if c.index >= 0 {
		if p := s.Get("prefixItems." + strconv.Itoa(c.index)); p.Exists() {
			return []gjson.Result{p}
		}
		items := s.Get("items")
		if items.IsArray() { // draft-07 tuple form
			if p := items.Get(strconv.Itoa(c.index)); p.Exists() {
				return []gjson.Result{p}
			}
			if a := s.Get("additionalItems"); a.IsObject() {
				return []gjson.Result{a}
			}
			return nil
		}
		if items.IsObject() {
			return []gjson.Result{items}
		}
		return nil
	}
	if p := s.Get("properties." + gjsonKey(c.key)); p.Exists() {
		return []gjson.Result{p}
	}
	if a := s.Get("additionalProperties"); a.IsObject() {
		return []gjson.Result{a}
	}
	return nil
}

// expand follows s's local $ref and appends to out s with every allOf,
// anyOf and oneOf branch, recursively. seen holds the subschemas (by
// offset in the schema) already expanded: each is gathered once, however
// many branches lead to it, so a fan-out costs what the schema's size does.
func (k keeper) expand(s gjson.Result, depth int, seen map[int]bool, out []gjson.Result) []gjson.Result {
	if depth > keeperMaxExpandDepth || !s.IsObject() || len(out) >= keeperMaxSchemas || seen[s.Index] {
		return out
	}
	seen[s.Index] = true
	if ref := s.Get(`\$ref`); ref.Type == gjson.String {
		if t, ok := k.resolveRef(ref.String()); ok {
			return k.expand(t, depth+1, seen, out)
		}
	}
	out = append(out, s)
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		s.Get(kw).ForEach(func(_, b gjson.Result) bool {
			out = k.expand(b, depth+1, seen, out)
			return len(out) < keeperMaxSchemas
		})
	}
	return out
}

// resolveRef resolves a local JSON pointer ("#/$defs/X") in the root.
func (k keeper) resolveRef(ref string) (gjson.Result, bool) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return gjson.Result{}, false
	}
	v := k.root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		v = v.Get(gjsonKey(tok))
		if !v.Exists() {
			return gjson.Result{}, false
		}
	}
	return v, true
}

// typesOf returns the JSON types the schemas allow; open is set when one of
// them does not constrain the type (no type, const or enum).
func typesOf(cands []gjson.Result) (types map[string]bool, open bool) {
	types = map[string]bool{}
	if len(cands) == 0 {
		return types, true
	}
	constrained := false
	for _, s := range cands {
		t := s.Get("type")
		switch {
		case t.Type == gjson.String:
			types[t.String()] = true
			constrained = true
		case t.IsArray():
			t.ForEach(func(_, x gjson.Result) bool { types[x.String()] = true; return true })
			constrained = true
		case s.Get("const").Exists() || s.Get("enum").Exists():
			constrained = true
		}
	}
	return types, !constrained
}

// placeholder returns the smallest value the schema at comps accepts, as
// far as it can tell: const, enum, default or example first, then a value
// of the first type allowed.
func (k keeper) placeholder(comps []scStep) []byte {
	budget := keeperMaxPlaceholderValues
	return k.placeholderOf(k.at(comps), len(comps), &budget)
}

// placeholderOf is placeholder for the subschemas cands, depth levels
// down; budget counts down the values it may still build (past it, or past
// keeperMaxPlaceholderDepth, required members are left out).
func (k keeper) placeholderOf(cands []gjson.Result, depth int, budget *int) []byte {
	*budget--
	for _, kw := range []string{"const", "enum.0", "default", "examples.0"} {
		for _, s := range cands {
			if v := s.Get(kw); v.Exists() {
				return []byte(v.Raw)
			}
		}
	}
	types, _ := typesOf(cands)
	switch {
	case types["null"]:
		return []byte("null")
	case types["string"]:
		return []byte(`""`)
	case types["integer"], types["number"]:
		for _, s := range cands {
			if m := s.Get("minimum"); m.Exists() {
				return []byte(m.Raw)
			}
		}
		return []byte("0")
	case types["boolean"]:
		return []byte("false")
	case types["array"]:
		return []byte("[]")
	}
	out := []byte{'{'}
	seen := map[string]bool{}
	for _, s := range cands {
		s.Get("required").ForEach(func(_, name gjson.Result) bool {
			n := name.String()
			if seen[n] || depth >= keeperMaxPlaceholderDepth || *budget <= 0 {
				return true
			}
			seen[n] = true
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = jsonstr.AppendString(out, n)
			out = append(out, ':')
			out = append(out, k.placeholderOf(k.step(cands, scStep{key: n, index: -1}), depth+1, budget)...)
			return true
		})
	}
	return append(out, '}')
}
