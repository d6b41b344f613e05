package engine_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/snapshottext"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
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
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "pdf", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) {
		return fixed{{Path: "pdf", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Verify: true}}, nil
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

// BenchmarkArtifactText is the executor storing one 600,000-character text
// block as sizenet plans it (a text artifact with a 200-character
// preview): an accessibility snapshot, whose JSON string holds an escape
// every dozen bytes, and plain text with none. fsstore writes and fsyncs
// each put (the syscalls count); noopstore shows the engine's own cost.
func BenchmarkArtifactText(b *testing.B) {
	for _, kind := range []struct {
		name string
		text string
	}{
		{"snapshot", snapshottext.Snapshot(600_000)},
		{"plain", snapshottext.Plain(600_000)},
	} {
		in := snapshottext.Result(kind.text)
		rw := fixed{{Target: layer.TargetResult, Path: "content.0", Form: layer.FormBlock, Action: layer.ActionArtifact, Encoding: layer.EncodingText, Keep: 200}}
		for _, stName := range []string{"fsstore", "noopstore"} {
			b.Run(kind.name+"/"+stName, func(b *testing.B) {
				var st store.Store = noopstore.New(nil)
				if stName == "fsstore" {
					fs, err := fsstore.Open(context.Background(), b.TempDir(), fsstore.Config{})
					if err != nil {
						b.Fatal(err)
					}
					defer fs.Close(context.Background())
					st = fs
				}
				reg := layer.NewRegistry()
				reg.Register(layer.Info{Name: "text", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return rw, nil }})
				eng, err := engine.New(engine.Options{Store: st, Registry: reg, Config: engine.Config{Chain: []string{"text"}}})
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				for b.Loop() {
					res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
					if err != nil || len(res.Artifacts) != 1 || res.Artifacts[0].SizeBytes != int64(len(kind.text)) {
						b.Fatalf("%v %+v %v", err, res.Artifacts, res.Failures)
					}
				}
			})
		}
	}
}
