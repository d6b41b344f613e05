package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// ordersPart is the artifact a guardrail cut leaves of a result
// {"orders": [8,000 items], …}: the orders array, its source path
// "orders".
func ordersPart(t *testing.T, st store.Store) store.Ref {
	t.Helper()
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 8000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"sku":"SKU-%05d"}`, i, i)
	}
	b.WriteByte(']')
	ref, err := st.Put(context.Background(), &b, store.PutOptions{Namespace: "shop", MIMEType: "application/json",
		Source: store.Source{Server: "shop", Tool: "orders", Path: "orders", Layer: "guardrail"}})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestJSONResultPaths: an artifact that holds part of a result answers
// the paths the model saw in the result (orders.7999.sku) as well as its
// own (7999.sku), and a path that matches nothing says what the
// artifact's root is and a path that works.
func TestJSONResultPaths(t *testing.T) {
	st := memstore.New(memstore.Config{})
	orders := ordersPart(t, st)
	for _, c := range []struct{ path, want string }{
		{"orders.7999.sku", `"SKU-07999"`},
		{"7999.sku", `"SKU-07999"`},
		{"orders.#", `8000`},
		{"orders|#", `8000`},
		{"orders.#(id==12).sku", `"SKU-00012"`},
	} {
		a, err := Run(context.Background(), st, orders, Request{JSON: c.path}, Budget{})
		if err != nil || a.Text != c.want {
			t.Errorf("%s: %q %v, want %s", c.path, a.Text, err, c.want)
		}
	}
	_, err := Run(context.Background(), st, orders, Request{JSON: "orders.8000.sku"}, Budget{})
	want := fmt.Sprintf(`query: out of range: path "orders.8000.sku" matches nothing in %s; it holds orders of the result, an array of 8000 items: ask for orders.0 (or 0), orders.#.KEY (or #.KEY)`, orders.ID)
	if !errors.Is(err, ErrOutOfRange) || err == nil || err.Error() != want {
		t.Errorf("past the end: %v\nwant %s", err, want)
	}

	// An object from deeper in the result: its keys, and the path to them.
	meta, err := st.Put(context.Background(), strings.NewReader(`{"name":"q3","owner":"ada"}`), store.PutOptions{Namespace: "shop", MIMEType: "application/json",
		Source: store.Source{Path: "data.meta", Layer: "guardrail"}})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := Run(context.Background(), st, meta, Request{JSON: "data.meta.owner"}, Budget{}); err != nil || a.Text != `"ada"` {
		t.Errorf("data.meta.owner: %q %v", a.Text, err)
	}
	_, err = Run(context.Background(), st, meta, Request{JSON: "data.meta.size"}, Budget{})
	want = fmt.Sprintf(`query: out of range: path "data.meta.size" matches nothing in %s; it holds data.meta of the result, an object with keys ["name","owner"]: ask for data.meta.name (or name)`, meta.ID)
	if err == nil || err.Error() != want {
		t.Errorf("missing key: %v\nwant %s", err, want)
	}
}
