package engine_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// BenchmarkContentSummary is a transform that stores one artifact, with
// content summaries on and off, in the store the binary uses (fsstore, on
// disk) and in memory: a 10 MiB PDF (base64 in structuredContent) and a
// 1 MB JSON text. Each round deletes the artifact (timer stopped), so that
// the next put stores and inspects it again instead of finding it.
func BenchmarkContentSummary(b *testing.B) {
	pdf := append([]byte("%PDF-1.7\n"), make([]byte, 10<<20)...)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 9; i < len(pdf); i++ {
		pdf[i] = byte(rng.Uint32())
	}
	var items []string
	for i, n := 0, 0; n < 1_000_000; i++ {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":"item %d","tags":["a","b"],"note":"a note of some length for item %d"}`, i, i, i))
		n += len(items[i]) + 2
	}
	jsonText := "[" + strings.Join(items, ",\n") + "]"
	cases := []struct {
		name string
		in   []byte
		rw   layer.Rewrite
	}{
		{"pdf10MiB", []byte(`{"content":[],"structuredContent":{"pdf":"` + base64.StdEncoding.EncodeToString(pdf) + `"}}`),
			layer.Rewrite{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Verify: true}},
		{"json1MB", []byte(`{"content":[],"structuredContent":{"json":` + jsonString(jsonText) + `}}`),
			layer.Rewrite{Path: "json", Action: layer.ActionArtifact, Encoding: layer.EncodingText, MIME: "application/json"}},
	}
	for _, tc := range cases {
		for _, backend := range []string{"fsstore", "memstore"} {
			for _, on := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/%s/inspect=%v", tc.name, backend, on), func(b *testing.B) {
					var st store.Store = memstore.New(memstore.Config{})
					if backend == "fsstore" {
						fs, err := fsstore.Open(context.Background(), b.TempDir(), fsstore.Config{})
						if err != nil {
							b.Fatal(err)
						}
						st = fs
					}
					defer st.Close(context.Background())
					reg := layer.NewRegistry()
					rw := tc.rw
					reg.Register(layer.Info{Name: "one", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) {
						return fixed{rw}, nil
					}})
					eng, err := engine.New(engine.Options{Store: st, Registry: reg, Config: engine.Config{Chain: []string{"one"}, Inspect: engine.InspectConfig{Enabled: &on}}})
					if err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(len(tc.in)))
					b.ReportAllocs()
					for b.Loop() {
						res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, tc.in)
						if err != nil || len(res.Artifacts) != 1 || (len(res.Artifacts[0].Content) > 0) != on {
							b.Fatalf("%v %+v %v", err, res.Artifacts, res.Failures)
						}
						b.StopTimer()
						if err := st.Delete(context.Background(), res.Artifacts[0].ID); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
				})
			}
		}
	}
}
