// Package mergepatch applies and composes JSON merge patches (RFC 7396),
// the one way mcpx layers configuration levels: layer options at the top
// of the pipeline, per server, per tool, and the gateway's mcpServers.X.mcpx
// sections all patch the level before them with it.
package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNotObject is returned when a patch to compose is not a JSON object.
var ErrNotObject = errors.New("merge patch must be a JSON object")

// Apply applies patch to dst in place, as RFC 7396 section 2 says: a null
// member deletes, an object member merges into an object (or replaces
// anything else with a fresh one), any other member replaces.
func Apply(dst, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				Apply(dm, pm)
				continue
			}
			fresh := map[string]any{}
			Apply(fresh, pm)
			dst[k] = fresh
			continue
		}
		dst[k] = v
	}
}

// Compose returns one patch that does what applying first, then second
// does. Unlike Apply it keeps second's nulls, so the deletions still reach
// the document the composed patch is applied to.
//
// A merge patch cannot say "replace this member with exactly this object":
// where first sets a member to null or a non-object and second patches it
// with an object, the composed patch merges second's object into the
// document's member instead. Every other case composes exactly.
//
// An empty first or second is no patch, and the other is returned as it
// is. Numbers keep their digits (no round trip through float64).
func Compose(first, second json.RawMessage) (json.RawMessage, error) {
	if len(second) == 0 {
		return first, nil
	}
	if len(first) == 0 {
		return second, nil
	}
	var a, b map[string]any
	if err := decodeObject(first, &a); err != nil {
		return nil, err
	}
	if err := decodeObject(second, &b); err != nil {
		return nil, err
	}
	compose(a, b)
	return json.Marshal(a)
}

// compose merges patch into dst keeping nulls (see Compose).
func compose(dst, patch map[string]any) {
	for k, v := range patch {
		pm, isObj := v.(map[string]any)
		dm, wasObj := dst[k].(map[string]any)
		if isObj && wasObj {
			compose(dm, pm)
			continue
		}
		dst[k] = v
	}
}

// decodeObject decodes raw into *m, keeping numbers exact (json.Number).
func decodeObject(raw json.RawMessage, m *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("merge patch: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%w, got %s", ErrNotObject, kindOf(v))
	}
	*m = obj
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
