package engine_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store/noopstore"
)

// BenchmarkArtifactPDF10MiB is the executor alone storing a 10 MiB plain
// base64 PDF: find, decode, hash. The store (noopstore) hashes and
// discards, so the figure is the engine's own cost, without a disk.
func BenchmarkArtifactPDF10MiB(b *testing.B) {
	data := append([]byte("%PDF-1.7\n"), make([]byte, 10<<20)...)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 9; i < len(data); i++ {
		data[i] = byte(rng.Uint32())
	}
	in := []byte(`{"content":[],"structuredContent":{"pdf":"` + base64.StdEncoding.EncodeToString(data) + `"}}`)
	reg := engine.NewRegistry()
	reg.Register(engine.LayerInfo{Name: "pdf", New: func(json.RawMessage, engine.Resources) (engine.Layer, error) {
		return fixed{{Path: "pdf", Action: engine.ActionArtifact, Encoding: engine.EncodingBase64, Verify: true}}, nil
	}})
	eng, err := engine.New(engine.Options{Store: noopstore.New(nil), Registry: reg, Config: engine.Config{Chain: []string{"pdf"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
		if err != nil || len(res.Artifacts) != 1 || res.Artifacts[0].SizeBytes != int64(len(data)) {
			b.Fatalf("%v %+v %v", err, res.Artifacts, res.Failures)
		}
	}
}
