package layer_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpx-dev/mcpx/engine/layer"
)

// kind is a layer kind whose layers say which kind built them.
type kind string

func (k kind) Plan(context.Context, *layer.Doc) ([]layer.Rewrite, error) { return nil, nil }

func info(name string, k kind) layer.Info {
	return layer.Info{Name: name, New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return k, nil }}
}

// TestRegistryWith: With copies the registry and its default order, puts
// the given kinds in place of those of the same names, adds new ones, and
// leaves the original as it was.
func TestRegistryWith(t *testing.T) {
	base := layer.NewRegistry()
	base.Register(info("a", "base a"))
	base.Register(info("b", "base b"))
	base.SetChain([]string{"a", "b", "c"})

	got := base.With(info("b", "bound b"), info("c", "new c"))

	built := func(r *layer.Registry, name string) layer.Layer {
		t.Helper()
		i, ok := r.Lookup(name)
		if !ok {
			return nil
		}
		l, err := i.New(nil, layer.Resources{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tc := range []struct {
		reg  *layer.Registry
		name string
		want layer.Layer
	}{
		{got, "a", kind("base a")},
		{got, "b", kind("bound b")},
		{got, "c", kind("new c")},
		{base, "b", kind("base b")},
		{base, "c", nil},
	} {
		if l := built(tc.reg, tc.name); l != tc.want {
			t.Errorf("%s: built %v, want %v", tc.name, l, tc.want)
		}
	}
	if names := got.Names(); !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("names %v", names)
	}
	if c := got.Chain(); !slices.Equal(c, []string{"a", "b", "c"}) {
		t.Errorf("chain %v", c)
	}
	got.SetChain([]string{"b"})
	if c := base.Chain(); !slices.Equal(c, []string{"a", "b", "c"}) {
		t.Errorf("the copy's SetChain changed the original's order: %v", c)
	}

	func() {
		defer func() {
			if r := recover(); r != `layer: "x" registered twice` {
				t.Errorf("two kinds of one name: recovered %v", r)
			}
		}()
		base.With(info("x", "1"), info("x", "2"))
	}()
}
