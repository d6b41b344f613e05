package layer_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// ticketOptions are the options of the example layer, as config gives them
// under "layers": {"tickets": {"keep": 2}}.
type ticketOptions struct {
	Keep int `json:"keep"`
}

// tickets keeps the first Keep tickets of a helpdesk result and stores the
// rest; it only looks and answers a rewrite, the engine does the work.
type tickets struct{ o ticketOptions }

func (t *tickets) Plan(_ context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	for _, c := range d.Carriers() {
		if sp, ok := c.Member("tickets"); ok && sp.End > sp.Off {
			return []layer.Rewrite{{Path: "tickets", Action: layer.ActionTruncate, Keep: t.o.Keep}}, nil
		}
	}
	return nil, nil
}

// A layer author defines a kind with NewInfo (options decoded strictly
// over their defaults), registers it (Register from init, or a Registry of
// one's own, as here) and names it in a chain.
func ExampleNewInfo() {
	reg := layer.NewRegistry()
	reg.Register(layer.NewInfo("tickets", "keeps the first tickets of a helpdesk result",
		func() ticketOptions { return ticketOptions{Keep: 1} },
		func(o ticketOptions, _ layer.Resources) (layer.Layer, error) { return &tickets{o: o}, nil }))
	reg.SetChain([]string{"tickets"})

	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{
		Layers: map[string]json.RawMessage{"tickets": json.RawMessage(`{"keep": 2}`)},
	}})
	if err != nil {
		panic(err)
	}
	defer eng.Close(context.Background())
	res, err := eng.Transform(context.Background(), engine.Call{Server: "helpdesk", Tool: "list"},
		[]byte(`{"structuredContent":{"tickets":["printer","vpn","email","badge"]}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(gjson.GetBytes(res.Raw, "structuredContent.tickets.#"), "items left,", len(res.Artifacts), "artifact")
	// Output:
	// 3 items left, 1 artifact
}
