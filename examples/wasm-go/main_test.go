package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
	_ "github.com/mcpx-dev/mcpx/layers" // registers custom
	"github.com/mcpx-dev/mcpx/layers/wasm"
	guest "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	wasmtest.Cleanup()
	os.Exit(code)
}

func input(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/export_report.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTransform runs the function natively, on the request the host would
// send.
func TestTransform(t *testing.T) {
	d := layer.NewDoc(engine.Call{Server: "crm", Tool: "export_report"}, input(t))
	out, isErr := guest.Handle(wasm.BuildRequest(d, wasm.ModeCustom, nil, wasm.DefaultLongString))
	if isErr {
		t.Fatalf("error: %s", out)
	}
	r := gjson.ParseBytes(out)
	if n := len(r.Get("rewrites").Array()); n != 3 {
		t.Fatalf("%d rewrites, want 2 attachments and the debug drop: %s", n, out)
	}
	if r.Get("rewrites.0.path").String() != "attachments.0.data" || r.Get("rewrites.2.action").String() != "drop" {
		t.Fatalf("unexpected rewrites: %s", out)
	}
	// Other tools are left alone.
	d = layer.NewDoc(engine.Call{Server: "crm", Tool: "list_reports"}, input(t))
	out, _ = guest.Handle(wasm.BuildRequest(d, wasm.ModeCustom, nil, wasm.DefaultLongString))
	if string(out) != `{"rewrites":[]}` {
		t.Fatalf("list_reports: %s", out)
	}
}

// TestPlugin builds the example with the standard toolchain and with
// TinyGo and runs both as the custom layer: same output.
func TestPlugin(t *testing.T) {
	var outs []string
	for _, c := range []wasmtest.Compiler{wasmtest.Go, wasmtest.TinyGo} {
		t.Run(string(c), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "wasm-go.wasm")
			if err := os.WriteFile(file, wasmtest.Build(t, c, "./examples/wasm-go"), 0o644); err != nil {
				t.Fatal(err)
			}
			opts, _ := json.Marshal(wasm.CustomOptions{Plugins: []wasm.PluginFile{{File: file}}})
			eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Config: engine.Config{
				Chain:  []string{"custom"},
				Layers: map[string]json.RawMessage{"custom": opts},
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close(context.Background())
			res, err := eng.Transform(context.Background(), engine.Call{Server: "crm", Tool: "export_report"}, input(t))
			if err != nil || len(res.Failures) > 0 {
				t.Fatalf("%v %v", err, res.Failures)
			}
			if len(res.Artifacts) != 2 { // the attachments; debug is under 1 KiB, so dropped unstored
				t.Fatalf("artifacts = %+v", res.Artifacts)
			}
			if res.Artifacts[0].Filename != "q3-review.pdf" || res.Artifacts[1].MIMEType != "image/png" {
				t.Fatalf("artifacts = %+v", res.Artifacts)
			}
			s := string(res.Raw)
			if !strings.Contains(s, "Attachment 'q3-review.pdf' of report 'Q3 pipeline review' — PDF 'q3-review.pdf'") || strings.Contains(s, "trace_id") {
				t.Errorf("output: %s", s)
			}
			// The plugin's words, then the engine's reference: the
			// plugin's own words do not name the id again.
			payload := gjson.Get(s, "content.0.text").String()
			for i, a := range res.Artifacts {
				sum := gjson.Get(payload, fmt.Sprintf("attachments.%d.data.summary", i)).String()
				const ref = "stored as artifact "
				if first, engine := strings.Index(sum, a.ID), strings.Index(sum, ref+a.ID); engine < 0 || first != engine+len(ref) {
					t.Errorf("attachment %d's summary names %s before the engine's reference: %s", i, a.ID, sum)
				}
			}
			outs = append(outs, s)
		})
	}
	if len(outs) == 2 && outs[0] != outs[1] {
		t.Fatal("the Go and TinyGo builds give different results")
	}
}
