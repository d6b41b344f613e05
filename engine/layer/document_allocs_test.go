package layer

import "testing"

// TestIndexSmallResultAllocs: indexing a small result, what the gateway
// does on every call, makes no string of a key it only compares (a
// block's "type" and "text") or of a CallToolResult's own members, and
// no slice for the root's first few members.
func TestIndexSmallResultAllocs(t *testing.T) {
	raw := []byte(`{"content":[{"type":"text","text":"Hi, Ada!"},{"type":"text","text":"and more"}],"isError":false,"_meta":{"k":1}}`)
	var blocks int
	allocs := testing.AllocsPerRun(100, func() {
		d := NewDoc(Call{Server: "s", Tool: "t"}, raw)
		if !d.IsMCP() {
			t.Fatal("not an MCP result")
		}
		blocks = len(d.Blocks())
	})
	if blocks != 2 {
		t.Fatalf("%d blocks, want 2", blocks)
	}
	// The Doc, the walk's state, and the lists of blocks and of text
	// literals as they grow (two each); 21 when every key and type was
	// made a string and the root's members grew a slice of their own.
	if allocs > 7 {
		t.Errorf("indexing a small result: %.0f allocations, want at most 7", allocs)
	}
}
