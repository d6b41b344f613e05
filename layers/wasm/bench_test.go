package wasm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

// guests are the modules the benchmarks compare: the Tableau preset built
// by TinyGo (embedded) and by Go, and the Rust example.
func guests(b *testing.B) []struct {
	name string
	bin  []byte
} {
	info, _ := plugins.Lookup("tableau")
	out := []struct {
		name string
		bin  []byte
	}{
		{"tinygo", info.Wasm},
		{"go", wasmtest.Build(b, wasmtest.Go, "./plugins/tableau")},
	}
	if _, ok := wasmtest.RustcPath(); ok {
		out = append(out, struct {
			name string
			bin  []byte
		}{"rust", wasmtest.BuildRust(b, "examples/wasm-rust/src/lib.rs")})
	}
	return out
}

// reportQuantiles records p50 and p99 of per-op durations.
func reportQuantiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1000, "p50-us")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1000, "p99-us")
}

// BenchmarkPluginOverhead is one plugin layer's cost on a small result with
// a pooled instance: request skeleton, the call, the response check.
func BenchmarkPluginOverhead(b *testing.B) {
	small := []byte(`{"content":[{"type":"text","text":"{\"workbooks\":[{\"id\":\"wb-1\",\"name\":\"Sales\"},{\"id\":\"wb-2\",\"name\":\"Ops\"}]}"}],"isError":false}`)
	h := newHost(b, nil)
	for _, g := range guests(b) {
		b.Run(g.name, func(b *testing.B) {
			p, err := h.Compile(context.Background(), g.name, g.bin, wasm.SandboxConfig{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())
			d := layer.NewDoc(engine.Call{Server: "tableau", Tool: "list-workbooks"}, small)
			ctx := context.Background()
			if _, err := p.Run(ctx, d, wasm.ModeCustom); err != nil {
				b.Fatal(err)
			}
			ds := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := p.Run(ctx, d, wasm.ModeCustom); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			reportQuantiles(b, ds)
		})
	}
}

// bigPDFResult is a Tableau download_workbook result carrying a PDF of n
// bytes as base64 inside JSON text.
func bigPDFResult(b *testing.B, n int) []byte {
	pdf := make([]byte, n)
	copy(pdf, "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	for i := 16; i < n; i++ {
		pdf[i] = byte(i*7 + i>>9)
	}
	payload, _ := json.Marshal(map[string]string{"workbook_id": "wb-7f3a", "name": "Sales Dashboard", "format": "pdf", "content": base64.StdEncoding.EncodeToString(pdf)})
	raw, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": string(payload)}}, "isError": false})
	return raw
}

// BenchmarkPreset10MiBPDF: the whole default chain on a 10 MiB Tableau PDF
// result, without and with the tableau preset (which then stores the PDF
// instead of the magic-bytes layer).
func BenchmarkPreset10MiBPDF(b *testing.B) {
	raw := bigPDFResult(b, 10<<20)
	h := newHost(b, nil)
	for _, tc := range []struct {
		name    string
		presets string
	}{
		{"engine_alone", `{"enabled":false}`},
		{"with_preset", `{"names":["tableau"]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := engine.Config{Layers: map[string]json.RawMessage{"presets": json.RawMessage(tc.presets)}}
			eng := newEngineAllLayers(b, h, cfg)
			ctx := context.Background()
			res, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, raw)
			if err != nil || len(res.Artifacts) != 1 || len(res.Failures) > 0 {
				b.Fatalf("%v %+v %v", err, res.Artifacts, res.Failures)
			}
			if want := "presets"; tc.name == "with_preset" && res.Artifacts[0].Source.Layer != want {
				b.Fatalf("stored by %s, want %s", res.Artifacts[0].Source.Layer, want)
			}
			b.SetBytes(int64(len(raw)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPresetPlan10MiBPDF is the tableau preset layer's own time on
// the 10 MiB result: the request skeleton and the call ("indexed": the
// document's index already built, as a later layer finds it; "fresh":
// indexing included, as the first layer pays it).
func BenchmarkPresetPlan10MiBPDF(b *testing.B) {
	raw := bigPDFResult(b, 10<<20)
	h := newHost(b, nil)
	p, err := h.Preset(context.Background(), "tableau")
	if err != nil {
		b.Fatal(err)
	}
	call := engine.Call{Server: "tableau", Tool: "download_workbook"}
	ctx := context.Background()
	b.Run("indexed", func(b *testing.B) {
		d := layer.NewDoc(call, raw)
		d.Strings(wasm.DefaultLongString)
		for i := 0; i < b.N; i++ {
			if rws, err := p.Plan(ctx, d); err != nil || len(rws) != 1 {
				b.Fatal(err, rws)
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if rws, err := p.Plan(ctx, layer.NewDoc(call, raw)); err != nil || len(rws) != 1 {
				b.Fatal(err, rws)
			}
		}
	})
}

// BenchmarkColdStart: load a plugin with the compilation cache warm — a new
// runtime, the module from the file cache, the first instance with its
// initialization — and serve the first call.
func BenchmarkColdStart(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "cache")
	small := layer.NewDoc(engine.Call{Server: "tableau", Tool: "list-workbooks"}, []byte(`{"workbooks":[]}`))
	for _, g := range guests(b) {
		b.Run(g.name, func(b *testing.B) {
			ctx := context.Background()
			h, err := wasm.NewHost(ctx, wasm.HostOptions{CacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close(ctx)
			warm, err := h.Compile(ctx, g.name, g.bin, wasm.SandboxConfig{}, nil) // fills the cache
			if err != nil {
				b.Fatal(err)
			}
			_ = warm.Close(ctx)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := h.Compile(ctx, g.name, g.bin, wasm.SandboxConfig{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Run(ctx, small, wasm.ModeCustom); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = p.Close(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(len(g.bin))/1024, "module-KiB")
		})
	}
}

// newEngineAllLayers is the default chain with the built-in layers and the
// WASM layers on h.
func newEngineAllLayers(tb testing.TB, h *wasm.Host, cfg engine.Config) *engine.Engine {
	reg := layer.DefaultRegistry().With(wasm.Layers(h)...)
	eng, err := engine.New(engine.Options{Store: newStore(), Config: cfg, Registry: reg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = eng.Close(context.Background()) })
	return eng
}

// TestModuleSizes logs the sizes of the Go and TinyGo builds side by side
// (go test -v -run TestModuleSizes ./layers/wasm).
func TestModuleSizes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds modules")
	}
	var rows []string
	for _, pkg := range []string{"./plugins/tableau", "./plugins/github", "./examples/wasm-go"} {
		g := wasmtest.Build(t, wasmtest.Go, pkg)
		tg := wasmtest.Build(t, wasmtest.TinyGo, pkg)
		if len(tg) >= len(g) {
			t.Errorf("%s: TinyGo build %d bytes, Go build %d: TinyGo should be smaller", pkg, len(tg), len(g))
		}
		rows = append(rows, fmt.Sprintf("%-20s go %8d B   tinygo %7d B", pkg, len(g), len(tg)))
	}
	if _, ok := wasmtest.RustcPath(); ok {
		rows = append(rows, fmt.Sprintf("%-20s rust %6d B", "examples/wasm-rust", len(wasmtest.BuildRust(t, "examples/wasm-rust/src/lib.rs"))))
	}
	t.Log("module sizes:\n" + strings.Join(rows, "\n"))
	_ = os.Stdout
}

// BenchmarkPrincipals is the cost of isolating principals (server, tenant,
// user) from each other: "same" is every call from one principal (a pooled
// instance each time); "rotate4" cycles through four principals, which the
// default pool of four keeps warm; "rotate8" cycles through eight, so each
// call instantiates a fresh instance (the guest's initialization included)
// and evicts the least recently used.
func BenchmarkPrincipals(b *testing.B) {
	small := []byte(`{"content":[{"type":"text","text":"{\"workbooks\":[{\"id\":\"wb-1\",\"name\":\"Sales\"},{\"id\":\"wb-2\",\"name\":\"Ops\"}]}"}],"isError":false}`)
	h := newHost(b, nil)
	for _, g := range guests(b) {
		for _, n := range []int{1, 4, 8} {
			name := fmt.Sprintf("%s/rotate%d", g.name, n)
			if n == 1 {
				name = g.name + "/same"
			}
			b.Run(name, func(b *testing.B) {
				p, err := h.Compile(context.Background(), g.name, g.bin, wasm.SandboxConfig{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close(context.Background())
				docs := make([]*layer.Doc, n)
				for i := range docs {
					c := engine.Call{Server: "tableau", Tool: "list-workbooks"}
					c.Scope.TenantID = fmt.Sprintf("tenant-%d", i)
					docs[i] = layer.NewDoc(c, small)
				}
				ctx := context.Background()
				for _, d := range docs {
					if _, err := p.Run(ctx, d, wasm.ModeCustom); err != nil {
						b.Fatal(err)
					}
				}
				ds := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if _, err := p.Run(ctx, docs[i%n], wasm.ModeCustom); err != nil {
						b.Fatal(err)
					}
					ds = append(ds, time.Since(start))
				}
				b.StopTimer()
				reportQuantiles(b, ds)
			})
		}
	}
}
