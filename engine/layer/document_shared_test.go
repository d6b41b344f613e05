//go:build linux

package layer_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/memfdbuf"
)

// TestDocSharedPayload: a Doc over a result read by memfdbuf (mcpx
// transform's input file) gives every JSON-in-text carrier the payload,
// members and long strings a Doc over the same bytes on the heap gives,
// whether the long run is shared with the input or not (escapes around it
// and inside the text after it, two blocks, a run at either end).
func TestDocSharedPayload(t *testing.T) {
	blob := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("%PDF-1.7 \xe2\xe3\xcf\xd3 binary"), 20000))
	texts := []string{
		`{"content":"` + blob + `","name":"Sales \"Q3\" – é","format":"pdf"}`,
		`["` + blob[:300000] + `", {"note":"tab\there\nnewline \u0001"}, "` + blob[:1000] + `"]`,
		`{"small":"under the threshold"}`,
		`{"a":"` + blob[:5000] + `\\"}`,
	}
	var blocks []map[string]string
	for _, s := range texts {
		blocks = append(blocks, map[string]string{"type": "text", "text": s})
	}
	raw, err := json.Marshal(map[string]any{"content": blocks, "isError": false})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shared, err := memfdbuf.ReadFile(f, int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Release()
	c := layer.Call{Server: "tableau", Tool: "download_workbook"}
	onPages := c
	onPages.Pages = shared
	got, want := describe(t, layer.NewDoc(onPages, shared.Bytes())), describe(t, layer.NewDoc(c, raw))
	if got != want {
		t.Fatalf("over the shared input:\n%.2000s\nover the heap:\n%.2000s", got, want)
	}
	if !strings.Contains(want, "carrier 1 text") {
		t.Fatalf("the result has no second JSON-in-text carrier:\n%.2000s", want)
	}
}

// describe renders what layers read of d: its carriers' payloads and
// members, and its long strings.
func describe(t *testing.T, d *layer.Doc) string {
	t.Helper()
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, c := range d.Carriers() {
		fmt.Fprintf(&b, "carrier %d %s block %d [%d,%d) payload %d bytes sha %x\n", i, c.Kind, c.Block, c.Off, c.End, len(c.Payload), hash(c.Payload))
		for _, k := range []string{"content", "name", "format", "note", "a", "small"} {
			if sp, ok := c.Member(k); ok {
				fmt.Fprintf(&b, "  member %s %+v %q\n", k, sp, c.Payload[sp.Off:min(sp.End, sp.Off+40)])
			}
		}
	}
	for _, s := range d.Strings(layer.IndexMinString) {
		fmt.Fprintf(&b, "string %+v\n", s)
	}
	return b.String()
}

func hash(b []byte) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}
