package layers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestSizeNetCSVText: a tool that returns a CSV export as a text block
// (no MIME type) gets the CSV summary, columns and rows, not "Text of
// 30,001 lines".
func TestSizeNetCSVText(t *testing.T) {
	var export strings.Builder
	export.WriteString("order_id,sku,qty,price\n")
	for i := range 30000 {
		fmt.Fprintf(&export, "%d,SKU-%05d,%d,%d.99\n", i, i%977, i%7+1, i%50)
	}
	in := fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, export.String())
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	res, err := eng.Transform(context.Background(), engine.Call{Server: "shop", Tool: "export"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	text := gjson.GetBytes(res.Raw, "content.0.text").String()
	want := "with 30,000 rows and columns order_id, sku, qty, price ("
	if !strings.Contains(text, want) {
		t.Fatalf("the summary does not say %q:\n%s", want, text)
	}
}
