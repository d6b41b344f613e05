package query

// Paths in the model's terms: an artifact that holds part of a tool's
// result (an array the guardrail cut, a field the size net stored)
// records where it was (store.Source.Path), and the model, which saw the
// result, writes its paths from the result's root ("orders.7999.sku",
// ".orders | length"). The json and jq modes take those as well as paths
// from the artifact's own root, and an error on a path says which part
// of the result the artifact is and a path that works.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/store"
)

// maxWrapIndex bounds an array index of a source path that a jq program
// is given the result's shape through: setpath fills the array up to it.
const maxWrapIndex = 10000

// resultPath is where in its tool's result an artifact's value was.
type resultPath struct {
	path string   // as recorded, in gjson's syntax: "orders", "data.items"
	keys []string // its components, unescaped
}

// resultPathOf returns where ref's value was in its result; false for an
// artifact that is a whole result, or whose path is not one value's.
func resultPathOf(ref store.Ref) (resultPath, bool) {
	if ref.Source.Path == "" {
		return resultPath{}, false
	}
	p, err := jsonwalk.ParsePath(ref.Source.Path)
	if err != nil || p.HasWildcard() || p.Len() == 0 {
		return resultPath{}, false
	}
	keys := make([]string, p.Len())
	for i := range keys {
		keys[i], _ = p.Comp(i)
	}
	return resultPath{path: ref.Source.Path, keys: keys}, true
}

// within returns a gjson path written from the result's root as a path
// from the artifact's: "orders.7999.sku" is "7999.sku" of the artifact
// that holds orders; false when path does not pass through it.
func (r resultPath) within(path string) (string, bool) {
	if path == r.path {
		return "@this", true
	}
	rest, ok := strings.CutPrefix(path, r.path)
	if !ok || (rest[0] != '.' && rest[0] != '|') || len(rest) == 1 {
		return "", false
	}
	return rest[1:], true
}

// notFound is the hint of a gjson path that matches nothing in data: the
// artifact's root (an array's length, an object's first keys) and paths
// that work, from the result's root and, in brackets, from the artifact's.
func (r resultPath) notFound(data []byte) string {
	root := gjson.ParseBytes(data)
	switch {
	case root.IsArray():
		n := 0
		root.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		return fmt.Sprintf("; it holds %s of the result, an array of %d items: ask for %s.0 (or 0), %s.#.KEY (or #.KEY)", r.path, n, r.path, r.path)
	case root.IsObject():
		keys, first := topKeys(root)
		if first == "" {
			return fmt.Sprintf("; it holds %s of the result, an empty object", r.path)
		}
		k := gjson.Escape(first)
		return fmt.Sprintf("; it holds %s of the result, an object with keys %s: ask for %s.%s (or %s)", r.path, keys, r.path, k, k)
	}
	return fmt.Sprintf("; it holds %s of the result, a %s", r.path, root.Type)
}

// topKeys lists an object's first keys as JSON, within 200 characters,
// and returns its first key.
func topKeys(root gjson.Result) (list, first string) {
	var keys []byte
	root.ForEach(func(k, _ gjson.Result) bool {
		if len(keys) > 0 {
			keys = append(keys, ',')
		} else {
			first = k.String()
		}
		keys = append(keys, k.Raw...)
		return len(keys) <= 200
	})
	if len(keys) == 0 {
		return "", ""
	}
	return cutString("["+string(keys)+"]", 200), first
}

// jqProgram returns program made to read the artifact as the result it
// came from, when program starts with the result path's first key
// (".orders | length", "[.orders[] | .sku]"): the artifact is set at its
// path in an otherwise empty result, unless it is an object that holds
// that key itself. False when program does not start so.
func (r resultPath) jqProgram(program string) (string, bool) {
	if len(r.keys) == 0 {
		return "", false
	}
	p := strings.TrimLeft(program, " \t\r\n[(")
	first := r.keys[0]
	quoted := strconv.Quote(first)
	forms := []string{"." + quoted, ".[" + quoted + "]"}
	if isIdent(first) {
		forms = append(forms, "."+first)
	}
	starts := false
	for _, f := range forms {
		if rest, ok := strings.CutPrefix(p, f); ok && (rest == "" || !isIdentByte(rest[0])) {
			starts = true
		}
	}
	if !starts {
		return "", false
	}
	elems := make([]string, len(r.keys))
	for i, k := range r.keys {
		elems[i] = strconv.Quote(k)
		if n, err := strconv.Atoi(k); err == nil && n >= 0 && n <= maxWrapIndex && strconv.Itoa(n) == k {
			elems[i] = k
		}
	}
	return fmt.Sprintf(`(if type == "object" and has(%s) then . else . as $mcpx_artifact | null | setpath([%s]; $mcpx_artifact) end) | (%s)`,
		quoted, strings.Join(elems, ","), program), true
}

// jqHint is what an error of a jq program adds: which part of the result
// the artifact is, of which kind (its first byte, root), and a program
// that works from the result's root and, in brackets, from the
// artifact's.
func (r resultPath) jqHint(id string, root byte) string {
	at := r.jq()
	switch root {
	case '[':
		return fmt.Sprintf("%s holds %s of the result, an array: write %s[0] (or .[0])", id, r.path, at)
	case '{':
		return fmt.Sprintf("%s holds %s of the result, an object: write %s.KEY (or .KEY)", id, r.path, at)
	}
	return fmt.Sprintf("%s holds %s of the result: write %s (or .)", id, r.path, at)
}

// jq renders the path as a jq path: .orders, .data.items[3], .["a b"].
func (r resultPath) jq() string {
	var b strings.Builder
	for _, k := range r.keys {
		switch n, err := strconv.Atoi(k); {
		case err == nil && n >= 0 && strconv.Itoa(n) == k:
			fmt.Fprintf(&b, "[%d]", n)
		case isIdent(k):
			b.WriteString("." + k)
		default:
			fmt.Fprintf(&b, ".[%s]", strconv.Quote(k))
		}
	}
	return b.String()
}

// isIdent reports whether s is a jq identifier, which .s names as a key.
func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
