package jsonwalk

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Path is a parsed rewrite path: gjson's dotted syntax with `\` escapes,
// where a component `#` or `*` matches any array index or object key. Other
// gjson features (queries, modifiers, multipaths) are not paths to a value
// and are rejected.
type Path struct {
	comps []pathComp
	src   string
}

type pathComp struct {
	key      string
	wildcard bool
}

// ParsePath parses a rewrite path. The empty path is the payload root.
func ParsePath(s string) (Path, error) {
	p := Path{src: s}
	if s == "" {
		return p, nil
	}
	var cur strings.Builder
	escaped := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			escaped = true
		case c == '.':
			p.comps = append(p.comps, newComp(cur.String(), escaped))
			cur.Reset()
			escaped = false
		case c == '|' || c == '@' || c == '?' || c == '(' || c == '[' || c == '{' || c == '!' || c == '=' || c == '<' || c == '>' || c == '%':
			if cur.Len() == 0 || c == '|' || c == '@' {
				return Path{}, fmt.Errorf("path %q: unsupported gjson syntax %q at %d (use plain keys, indexes, # or *)", s, c, i)
			}
			cur.WriteByte(c)
		default:
			cur.WriteByte(c)
		}
	}
	p.comps = append(p.comps, newComp(cur.String(), escaped))
	for _, c := range p.comps {
		if c.key == "" && !c.wildcard {
			return Path{}, fmt.Errorf("path %q: empty component", s)
		}
	}
	return p, nil
}

func newComp(s string, escaped bool) pathComp {
	if !escaped && (s == "#" || s == "*") {
		return pathComp{wildcard: true}
	}
	return pathComp{key: s}
}

// String returns the path as it was written.
func (p Path) String() string { return p.src }

// Len is the number of components.
func (p Path) Len() int { return len(p.comps) }

// HasWildcard reports whether the path may match several values.
func (p Path) HasWildcard() bool {
	for _, c := range p.comps {
		if c.wildcard {
			return true
		}
	}
	return false
}

// Match reports whether the walked location path is matched exactly.
func (p Path) Match(path []PathElem) bool {
	if len(path) != len(p.comps) {
		return false
	}
	return p.MatchPrefix(path)
}

// MatchPrefix reports whether the first len(path) components match path; a
// walk uses it to skip subtrees that cannot hold a match.
func (p Path) MatchPrefix(path []PathElem) bool {
	if len(path) > len(p.comps) {
		return false
	}
	for i, e := range path {
		if !p.MatchAt(i, e) {
			return false
		}
	}
	return true
}

// Comp returns component i: its key, or wildcard for `#` and `*`.
func (p Path) Comp(i int) (key string, wildcard bool) {
	return p.comps[i].key, p.comps[i].wildcard
}

// KeyPath is the path of plain object keys, taken literally.
func KeyPath(keys ...string) Path {
	p := Path{}
	escaped := make([]string, len(keys))
	for i, k := range keys {
		p.comps = append(p.comps, pathComp{key: k})
		escaped[i] = gjson.Escape(k)
	}
	p.src = strings.Join(escaped, ".")
	return p
}

// MatchAt reports whether component i matches the location element e.
func (p Path) MatchAt(i int, e PathElem) bool {
	c := p.comps[i]
	switch {
	case c.wildcard:
		return true
	case e.IsIndex():
		return strconv.Itoa(e.Index) == c.key
	default:
		return e.KeyIs(c.key)
	}
}
