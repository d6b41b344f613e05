package layers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestGuardrailNoteNamesThePath: the note of an array the guardrail cut
// says that its artifact takes the result's paths, with the path of its
// last item, as the model sees it.
func TestGuardrailNoteNamesThePath(t *testing.T) {
	orders := make([]map[string]any, 8000)
	for i := range orders {
		orders[i] = map[string]any{"id": i, "sku": fmt.Sprintf("SKU-%05d", i), "name": fmt.Sprintf("Item number %d", i)}
	}
	payload, _ := json.Marshal(map[string]any{"orders": orders, "total": len(orders)})
	in, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(payload)}}})
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	res, err := eng.Transform(context.Background(), engine.Call{Server: "shop", Tool: "orders"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Source.Path != "orders" {
		t.Fatalf("artifacts %+v, want the orders array", res.Artifacts)
	}
	text := gjson.GetBytes(res.Raw, "content.0.text").String()
	items := gjson.Get(text, "orders")
	note := items.Get(fmt.Sprint(len(items.Array()) - 1)).String()
	id := res.Artifacts[0].ID
	want := fmt.Sprintf(" of 8000 items; all of it (%s) is artifact %s at mcpx://artifacts/%s ; query it by this result's paths, as orders.7999 ]",
		strings.TrimSpace(strings.SplitN(strings.SplitN(note, "(", 2)[1], ")", 2)[0]), id, id)
	if !strings.HasPrefix(note, "[truncated: showing ") || !strings.HasSuffix(note, want) {
		t.Fatalf("the note is %q, want it to end %q", note, want)
	}
	if n := len(res.Raw) - len(gjson.GetBytes(res.Raw, "_meta").Raw); n > 50000 {
		t.Errorf("the result is %d bytes besides its _meta, over the 50,000 of max_observation_chars", n)
	}
}
