package jq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestJQResultPaths: a jq program written from the root of the result
// the model saw (.orders | …) runs over the artifact that holds the
// result's orders, as does one written from the artifact's own root; a
// program that fails says what the artifact is of the result and a
// program that works.
func TestJQResultPaths(t *testing.T) {
	st := memstore.New(memstore.Config{})
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 8000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"sku":"SKU-%05d"}`, i, i)
	}
	b.WriteByte(']')
	orders, err := st.Put(context.Background(), &b, store.PutOptions{Namespace: "shop", MIMEType: "application/json",
		Source: store.Source{Server: "shop", Path: "orders", Layer: "guardrail"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ program, want string }{
		{".orders | length", "8000"},
		{".orders[7999].sku", `"SKU-07999"`},
		{`[.orders[] | select(.id == 12) | .sku]`, `["SKU-00012"]`},
		{`.["orders"][1].id`, "1"},
		{"length", "8000"},
		{".[7999].sku", `"SKU-07999"`},
	} {
		a, err := runJQ(st, orders, c.program, query.Budget{})
		if err != nil || a.Text != c.want {
			t.Errorf("%s: %q %v, want %s", c.program, a.Text, err, c.want)
		}
	}
	_, err = runJQ(st, orders, ".order[0]", query.Budget{})
	want := "; " + orders.ID + " holds orders of the result, an array: write .orders[0] (or .[0])"
	if !errors.Is(err, query.ErrBadProgram) || !bytes.HasSuffix([]byte(err.Error()), []byte(want)) {
		t.Errorf(".order[0]: %v\nwant it to end %q", err, want)
	}

	// An object from deeper in the result, that holds a key of the
	// result path's first name itself: the program reads the object.
	meta, err := st.Put(context.Background(), bytes.NewReader([]byte(`{"data":"own","owner":"ada"}`)), store.PutOptions{Namespace: "shop", MIMEType: "application/json",
		Source: store.Source{Path: "data.meta", Layer: "guardrail"}})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := runJQ(st, meta, ".data", query.Budget{}); err != nil || a.Text != `"own"` {
		t.Errorf(".data of an object that holds data: %q %v", a.Text, err)
	}
	meta, err = st.Put(context.Background(), bytes.NewReader([]byte(`{"name":"q3","owner":"ada"}`)), store.PutOptions{Namespace: "shop", MIMEType: "application/json",
		Source: store.Source{Path: "data.meta", Layer: "guardrail"}})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := runJQ(st, meta, ".data.meta.owner", query.Budget{}); err != nil || a.Text != `"ada"` {
		t.Errorf(".data.meta.owner: %q %v", a.Text, err)
	}
}
