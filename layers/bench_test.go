package layers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	asmb64 "github.com/segmentio/asm/base64"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// pdfResult builds a Tableau download_workbook result of about size bytes:
// a JSON-in-text block whose "content" is a base64 PDF. seed varies the
// bytes so each iteration stores new content.
func pdfResult(size int, seed uint64) []byte {
	raw := make([]byte, size*3/4)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	copy(raw, "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	enc := asmb64.StdEncoding.EncodeToString(raw)
	inner := `{"content":"` + enc + `","name":"Sales Dashboard","format":"pdf"}`
	var b bytes.Buffer
	b.WriteString(`{"content":[{"type":"text","text":`)
	q, _ := json.Marshal(inner)
	b.Write(q)
	b.WriteString(`}],"isError":false}`)
	return b.Bytes()
}

func recordsResult(n int) []byte {
	type rec struct {
		ID    int      `json:"id"`
		Name  string   `json:"name"`
		Tags  []string `json:"tags"`
		Score float64  `json:"score"`
		Note  string   `json:"note"`
	}
	rs := make([]rec, n)
	for i := range rs {
		rs[i] = rec{i, fmt.Sprintf("record %d", i), []string{"alpha", "beta"}, float64(i) / 2, "an ordinary note about the record"}
	}
	b, _ := json.Marshal(map[string]any{"records": rs})
	return b
}

// benchEngine transforms docs(i) in iteration i; with fixedDoc, docs(0)
// every time, without stopping the timer (which costs more than a small
// transform).
func benchEngine(b *testing.B, st store.Store, cfg engine.Config, docs func(i int) []byte, fixedDoc bool) {
	eng, err := engine.New(engine.Options{Store: st, Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	first := docs(0)
	b.SetBytes(int64(len(first)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in := first
		if !fixedDoc {
			b.StopTimer()
			in = docs(i)
			b.StartTimer()
		}
		res, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Failures) > 0 {
			b.Fatal(res.Failures)
		}
	}
}

// BenchmarkChainPDF10MiB is the engine's whole default chain on a 10 MiB
// Tableau PDF result, storing into fsstore (write + fsync) and memstore.
func BenchmarkChainPDF10MiB(b *testing.B) {
	docs := func(i int) []byte { return pdfResult(10<<20, uint64(i)) }
	b.Run("fsstore", func(b *testing.B) {
		st, err := fsstore.Open(context.Background(), b.TempDir(), fsstore.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(context.Background())
		benchEngine(b, st, engine.Config{}, docs, false)
	})
	b.Run("memstore", func(b *testing.B) {
		benchEngine(b, memstore.New(memstore.Config{}), engine.Config{}, docs, false)
	})
}

// BenchmarkFloorPDF10MiB is the floor the engine is measured against: locate
// the base64 value, decode it, SHA-256 it and write + fsync it, by hand.
func BenchmarkFloorPDF10MiB(b *testing.B) {
	dir := b.TempDir()
	first := pdfResult(10<<20, 0)
	b.SetBytes(int64(len(first)))
	buf := make([]byte, 10<<20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		in := pdfResult(10<<20, uint64(i))
		b.StartTimer()
		start := bytes.Index(in, []byte(`\"content\":\"`)) + len(`\"content\":\"`)
		end := start + bytes.IndexByte(in[start:], '\\')
		n, err := asmb64.StdEncoding.Decode(buf, in[start:end])
		if err != nil {
			b.Fatal(err)
		}
		sum := sha256.Sum256(buf[:n])
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%x", sum[:8])))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(buf[:n]); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkChainRecords1MB is a result with nothing to extract: 1 MB of
// ordinary JSON records through every layer but the guardrail (whose
// clamping is measured by BenchmarkGuardrail1MB).
func BenchmarkChainRecords1MB(b *testing.B) {
	doc := recordsResult(11000)
	cfg := engine.Config{Layers: map[string]json.RawMessage{"guardrail": json.RawMessage(`{"enabled":false}`)}}
	benchEngine(b, memstore.New(memstore.Config{}), cfg, func(int) []byte { return doc }, true)
}

// BenchmarkGuardrail1MB is the guardrail clamping 1 MB of records.
func BenchmarkGuardrail1MB(b *testing.B) {
	doc := recordsResult(11000)
	cfg := engine.Config{Chain: []string{"guardrail"}}
	benchEngine(b, memstore.New(memstore.Config{}), cfg, func(int) []byte { return doc }, true)
}

// BenchmarkSmallResult is the chain on a small everyday result.
func BenchmarkSmallResult(b *testing.B) {
	doc := []byte(`{"content":[{"type":"text","text":"{\"workbooks\":[{\"id\":\"123\",\"name\":\"Sales\"},{\"id\":\"456\",\"name\":\"Marketing\"}]}"}]}`)
	benchEngine(b, memstore.New(memstore.Config{}), engine.Config{}, func(int) []byte { return doc }, true)
}
