package engine

// Drops and path creation as byte edits: a drop removes its value and one
// separator by offset (never by path, so duplicate keys, splats and earlier
// drops cannot redirect it), and a replace that creates its path inserts a
// member into the deepest object that exists.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

// child is a member or element of a container: [start, end) covers its key
// for members; off is the value's offset.
type child struct{ start, off, end int }

// children lists the members or elements of the container at raw[off] in
// one shallow pass.
func children(raw []byte, off int) []child {
	var out []child
	_ = jsonwalk.WalkValidated(raw[off:], func(v *jsonwalk.Visit) jsonwalk.Step {
		switch {
		case len(v.Path) == 0:
			if v.Leave {
				return jsonwalk.Stop
			}
			return jsonwalk.Descend
		case v.Leave:
			out[len(out)-1].end = off + v.End
			return jsonwalk.Descend
		}
		start := v.Off
		if v.KeyOff >= 0 {
			start = v.KeyOff
		}
		out = append(out, child{start: off + start, off: off + v.Off, end: off + v.End})
		return jsonwalk.SkipValue
	})
	return out
}

// dropEdits turns drops into deletions: each run of dropped neighbours goes
// with the separator before it (or after it, for a run at the start), so
// the container stays valid JSON however many of its values go.
func dropEdits(raw []byte, drops []dropAt) []jsonwalk.Edit {
	byParent := map[int]map[int]bool{}
	var parents []int
	for _, d := range drops {
		if byParent[d.parent] == nil {
			byParent[d.parent] = map[int]bool{}
			parents = append(parents, d.parent)
		}
		byParent[d.parent][d.off] = true
	}
	slices.Sort(parents)
	var eds []jsonwalk.Edit
	for _, p := range parents {
		gone := byParent[p]
		kids := children(raw, p)
		for i := 0; i < len(kids); {
			if !gone[kids[i].off] {
				i++
				continue
			}
			j := i
			for j+1 < len(kids) && gone[kids[j+1].off] {
				j++
			}
			switch {
			case i > 0:
				eds = append(eds, jsonwalk.Edit{Off: kids[i-1].end, Len: kids[j].end - kids[i-1].end})
			case j+1 < len(kids):
				eds = append(eds, jsonwalk.Edit{Off: kids[i].start, Len: kids[j+1].start - kids[i].start})
			default:
				eds = append(eds, jsonwalk.Edit{Off: kids[i].start, Len: kids[j].end - kids[i].start})
			}
			i = j + 1
		}
	}
	return eds
}

// createPath puts value at p in raw, creating the members p names below
// the deepest one that exists. Only objects gain members; an array gains
// an element only at its end.
func createPath(raw []byte, p jsonwalk.Path, value []byte) ([]byte, error) {
	off := skipWS(raw, 0)
	for i := 0; i < p.Len(); i++ {
		key, _ := p.Comp(i)
		if off >= len(raw) || (raw[off] != '{' && raw[off] != '[') {
			return nil, fmt.Errorf("%w: %q runs through a value that is not an object", ErrNoPath, p.String())
		}
		kids := children(raw, off)
		end := off + 1
		if len(kids) > 0 {
			end = kids[len(kids)-1].end
		}
		closeAt := skipWS(raw, end)
		if raw[off] == '[' {
			n, err := strconv.Atoi(key)
			if err != nil || n < 0 || n > len(kids) {
				return nil, fmt.Errorf("%w: %q: index %q of an array of %d", ErrNoPath, p.String(), key, len(kids))
			}
			if n < len(kids) {
				off = kids[n].off
				if i == p.Len()-1 {
					return jsonwalk.Splice(raw, []jsonwalk.Edit{{Off: off, Len: kids[n].end - off, With: value}})
				}
				continue
			}
			if i != p.Len()-1 {
				return nil, fmt.Errorf("%w: %q: only the last component may append to an array", ErrNoPath, p.String())
			}
			return jsonwalk.Splice(raw, []jsonwalk.Edit{{Off: closeAt, With: insertion(len(kids) > 0, jsonwalk.Path{}, 0, value)}})
		}
		found := false
		for _, k := range kids {
			kb := raw[k.start+1:]
			kend, _ := jsonwalk.StringEnd(raw, k.start)
			if (jsonwalk.PathElem{Key: kb[:kend-k.start-2]}).KeyIs(key) {
				off, found = k.off, true
				if i == p.Len()-1 {
					return jsonwalk.Splice(raw, []jsonwalk.Edit{{Off: off, Len: k.end - off, With: value}})
				}
				break
			}
		}
		if found {
			continue
		}
		if p.Len()-i > layer.MaxCreatedLevels {
			return nil, fmt.Errorf("%w: %q would create %d levels (at most %d)", ErrLimit, p.String(), p.Len()-i, layer.MaxCreatedLevels)
		}
		return jsonwalk.Splice(raw, []jsonwalk.Edit{{Off: closeAt, With: insertion(len(kids) > 0, p, i, value)}})
	}
	return nil, fmt.Errorf("%w: %q", ErrNoPath, p.String())
}

// insertion is `[,]"k1":{"k2":...value}` for an object, the keys being p's
// components from the one at from (or `[,]value` for an array, when there
// are none).
func insertion(comma bool, p jsonwalk.Path, from int, value []byte) []byte {
	var b []byte
	if comma {
		b = append(b, ',')
	}
	for i := from; i < p.Len(); i++ {
		if i > from {
			b = append(b, '{')
		}
		key, _ := p.Comp(i)
		b = jsonstr.AppendString(b, key)
		b = append(b, ':')
	}
	b = append(b, value...)
	for i := from + 1; i < p.Len(); i++ {
		b = append(b, '}')
	}
	return b
}

func skipWS(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}
