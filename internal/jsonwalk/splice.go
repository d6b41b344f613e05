package jsonwalk

import (
	"errors"
	"fmt"
	"slices"
)

// Edit replaces raw[Off:Off+Len] with With.
type Edit struct {
	Off, Len int
	With     []byte
}

// ErrOverlap is returned by Splice for edits that overlap.
var ErrOverlap = errors.New("jsonwalk: overlapping edits")

// Splice applies edits to raw in one pass and returns the result in a new
// buffer sized exactly for it (raw itself when there are no edits); raw is
// not modified. Edits may come in any order;
// they must lie inside raw and must not overlap (two inserts at one offset
// count as overlapping).
func Splice(raw []byte, eds []Edit) ([]byte, error) {
	if len(eds) == 0 {
		return raw, nil
	}
	eds = slices.Clone(eds)
	// By offset, an insert before a replacement at the same offset.
	slices.SortFunc(eds, func(a, b Edit) int {
		if a.Off != b.Off {
			return a.Off - b.Off
		}
		return a.Len - b.Len
	})
	size := len(raw)
	prev := 0
	for i, e := range eds {
		if e.Off < 0 || e.Len < 0 || e.Off+e.Len > len(raw) {
			return nil, fmt.Errorf("jsonwalk: edit [%d,%d) outside document of %d bytes", e.Off, e.Off+e.Len, len(raw))
		}
		if i > 0 && e.Off < prev || (i > 0 && e.Off == prev && e.Len == 0 && eds[i-1].Len == 0) {
			return nil, fmt.Errorf("%w: at offset %d", ErrOverlap, e.Off)
		}
		prev = e.Off + e.Len
		size += len(e.With) - e.Len
	}
	out := make([]byte, 0, size)
	at := 0
	for _, e := range eds {
		out = append(out, raw[at:e.Off]...)
		out = append(out, e.With...)
		at = e.Off + e.Len
	}
	return append(out, raw[at:]...), nil
}
