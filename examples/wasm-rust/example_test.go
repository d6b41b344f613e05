// Package wasmrust_test builds the Rust example plugin with Debian's rustc
// and runs it as the custom layer.
package wasmrust_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
	_ "github.com/mcpx-dev/mcpx/layers" // registers custom
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	wasmtest.Cleanup()
	os.Exit(code)
}

func TestPlugin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "search.wasm")
	if err := os.WriteFile(file, wasmtest.BuildRust(t, "examples/wasm-rust/src/lib.rs"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile("testdata/search.json")
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(wasm.CustomOptions{Plugins: []wasm.PluginFile{{File: file, Config: json.RawMessage(`{"keep":2}`)}}})
	st := memstore.New(memstore.Config{})
	eng, err := engine.New(engine.Options{Store: st, Config: engine.Config{
		Chain:  []string{"custom"},
		Layers: map[string]json.RawMessage{"custom": opts},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	res, err := eng.Transform(context.Background(), engine.Call{Server: "docs", Tool: "search_docs"}, in)
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("%v %v", err, res.Failures)
	}
	text := gjson.GetBytes(res.Raw, "content.0.text").String()
	digest := gjson.Parse(text)
	if digest.Get("total").Int() != 40 || len(digest.Get("top").Array()) != 2 || digest.Get("top.1.url").String() != "https://docs.example.com/page/1" {
		t.Fatalf("digest = %s", text)
	}
	// The replaced original is stored whole.
	if len(res.Artifacts) != 1 {
		t.Fatalf("artifacts = %+v, want the original payload", res.Artifacts)
	}
	rc, ref, err := st.Get(context.Background(), res.Artifacts[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	orig := gjson.GetBytes(in, "content.0.text").String()
	if ref.SizeBytes != int64(len(orig)) {
		t.Fatalf("stored %d bytes, the original payload has %d", ref.SizeBytes, len(orig))
	}
	// Other tools pass through.
	res, err = eng.Transform(context.Background(), engine.Call{Server: "docs", Tool: "get_page"}, in)
	if err != nil || string(res.Raw) != string(in) {
		t.Fatalf("get_page changed: %v", err)
	}
}
