package main

import (
	"os"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	guest "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"
)

// TestTicketPlugin runs the function natively on the request mcpx sends for
// a get_ticket result (testdata/ticket.json, from
// "go run ./examples/newcomer/helpdesk --print T-1042").
func TestTicketPlugin(t *testing.T) {
	raw, err := os.ReadFile("testdata/ticket.json")
	if err != nil {
		t.Fatal(err)
	}
	d := layer.NewDoc(engine.Call{Server: "helpdesk", Tool: "get_ticket"}, raw)
	out, isErr := guest.Handle(wasm.BuildRequest(d, wasm.ModeCustom, nil, wasm.DefaultLongString))
	if isErr {
		t.Fatalf("plugin error: %s", out)
	}
	rws := gjson.GetBytes(out, "rewrites").Array()
	if len(rws) != 3 {
		t.Fatalf("rewrites = %s, want two attachments and the history", out)
	}
	for i, name := range []string{"invoice-march.pdf", "test-page.png"} {
		rw := rws[i]
		if rw.Get("filename").String() != name || rw.Get("encoding").String() != "base64" || rw.Get("summary").String() != "Attachment '"+name+"'" {
			t.Errorf("rewrite %d = %s", i, rw.Raw)
		}
	}
	h := rws[2]
	if h.Get("action").String() != "replace" || len(h.Get("value").Array()) != 5 || h.Get("value.4.note").String() != "Update 40 on T-1042: checked the printer queue, restarted spooler, customer replied." {
		t.Fatalf("history rewrite = %s", h.Raw)
	}
	// Other tools are left alone.
	d = layer.NewDoc(engine.Call{Server: "helpdesk", Tool: "list_tickets"}, raw)
	if out, _ := guest.Handle(wasm.BuildRequest(d, wasm.ModeCustom, nil, wasm.DefaultLongString)); string(out) != `{"rewrites":[]}` {
		t.Fatalf("list_tickets: %s", out)
	}
}
