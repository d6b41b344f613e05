package layers_test

// Reproductions of what went wrong on hostile input, through the default
// chain: each test feeds such an input and asserts what must hold instead.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func chain(t testing.TB, cfg engine.Config) (*engine.Engine, store.Store) {
	t.Helper()
	st := memstore.New(memstore.Config{})
	eng, err := engine.New(engine.Options{Store: st, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return eng, st
}

// With duplicate keys, {"a": <PDF b64>, "a": <PNG b64>} lost the PNG (later: stored it
// as application/pdf). Both are stored with their own MIME type, in a
// text block and in structuredContent.
func TestDuplicateKeysKeepBoth(t *testing.T) {
	pdfBytes := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("p"), 3000)...)
	pngBytes := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("q"), 3000)...)
	payload := `{"a":"` + base64.StdEncoding.EncodeToString(pdfBytes) + `","a":"` + base64.StdEncoding.EncodeToString(pngBytes) + `"}`
	text, _ := json.Marshal(payload)
	for name, in := range map[string]string{
		"text block":        `{"content":[{"type":"text","text":` + string(text) + `}]}`,
		"structuredContent": `{"content":[],"structuredContent":` + payload + `}`,
		"raw":               payload,
	} {
		eng, st := chain(t, engine.Config{})
		res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]byte{}
		for _, a := range res.Artifacts {
			checkStored(t, st, a)
			rc, _, err := st.Get(context.Background(), a.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.ReadFrom(rc)
			rc.Close()
			got[a.MIMEType] = b.Bytes()
		}
		if len(res.Artifacts) != 2 || !bytes.Equal(got["application/pdf"], pdfBytes) || !bytes.Equal(got["image/png"], pngBytes) {
			t.Errorf("%s: artifacts %+v", name, res.Artifacts)
		}
		if n := bytes.Count(res.Raw, []byte(`mcpx://artifacts/`)); n < 2 {
			t.Errorf("%s: %d refs in the output", name, n)
		}
	}
}

// imagesResult is an MCP result of n small PNG image blocks.
func imagesResult(n int) []byte {
	png := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...))
	var b bytes.Buffer
	b.WriteString(`{"content":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"image","mimeType":"image/png","data":"%s"}`, png)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// 10,000 small images in one result took 40 s (100,000 did not
// finish in 8 minutes). The first 100 become artifacts, the rest stay
// inline where the guardrail cuts the list (storing it whole), and a note
// tells the model.
func TestManyImagesAreCappedAndClamped(t *testing.T) {
	in := imagesResult(10000)
	eng, st := chain(t, engine.Config{})
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
	if err != nil {
		t.Fatal(err)
	}
	// _meta, for the host, lists at most 10 full refs of stored blocks
	// after the cut: bounded apart from the observation's budget.
	meta := len(gjson.GetBytes(res.Raw, "_meta").Raw)
	if !json.Valid(res.Raw) || len(res.Raw)-meta > 52000 || meta > 6000 {
		t.Fatalf("output %d bytes, _meta %d", len(res.Raw), meta)
	}
	if len(res.Artifacts) != engine.DefaultMaxArtifactsPerResult+1 || !res.Clamped {
		t.Fatalf("%d artifacts, clamped %v", len(res.Artifacts), res.Clamped)
	}
	blocks := gjson.GetBytes(res.Raw, "content").Array()
	last := blocks[len(blocks)-1].Get("text").String()
	if !strings.Contains(last, "limit of 100 artifacts; 9900 more") {
		t.Errorf("note %q", last)
	}
	marker := blocks[len(blocks)-2].Get("text").String()
	list := res.Artifacts[len(res.Artifacts)-1]
	if !strings.Contains(marker, list.ID) {
		t.Errorf("marker %q does not name %s", marker, list.ID)
	}
	checkStored(t, st, list)
	// The stored list holds every image still inline after the cap.
	rc, _, err := st.Get(context.Background(), list.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(rc)
	rc.Close()
	if n := gjson.GetBytes(b.Bytes(), `#(type=="image")#`).Array(); len(n) != 9900 {
		t.Errorf("stored list holds %d images, want 9900", len(n))
	}
}

// BenchmarkManyArtifacts shows the executor scaling linearly with the
// number of rewrites of one result: 1,000 and 10,000 image blocks, each
// stored (the cap raised past them, the guardrail off).
func BenchmarkManyArtifacts(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			doc := imagesResult(n)
			cfg := engine.Config{MaxArtifactsPerResult: 1 << 20, Layers: map[string]json.RawMessage{"guardrail": json.RawMessage(`{"enabled":false}`)}}
			eng, _ := chain(b, cfg)
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, doc)
				if err != nil || len(res.Artifacts) != n {
					b.Fatalf("%v: %d artifacts", err, len(res.Artifacts))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
		})
	}
}

// BenchmarkDeepNesting is the chain over 10,000 nesting levels (the
// default MaxDepth) with a long string at the bottom: linear in the size.
func BenchmarkDeepNesting(b *testing.B) {
	doc := []byte(strings.Repeat(`{"a":`, engine.DefaultMaxDepth) + `"` + strings.Repeat("y", 60000) + `"` + strings.Repeat("}", engine.DefaultMaxDepth))
	eng, _ := chain(b, engine.Config{})
	b.SetBytes(int64(len(doc)))
	for i := 0; i < b.N; i++ {
		if _, err := eng.Transform(context.Background(), engine.Call{Server: "s"}, doc); err != nil {
			b.Fatal(err)
		}
	}
}

// A 400,000-deep structuredContent kept a core busy after the
// client gave up. Every layer and the executor stop on a done context.
func TestCancellationStopsTheChain(t *testing.T) {
	in := recordsResult(20000)
	for _, name := range []string{"guardrail", "sizenet", "magicbytes", "typedcontent"} {
		info, _ := layer.DefaultRegistry().Lookup(name)
		l, err := info.New(json.RawMessage(`{}`), layer.Resources{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var many bytes.Buffer
		many.WriteString(`{"content":[`)
		for i := 0; i < 2000; i++ {
			fmt.Fprintf(&many, `{"type":"text","text":%q},`, strings.Repeat("z", 300))
		}
		many.WriteString(`{"type":"image","data":"AAAA"}],"structuredContent":`)
		many.Write(in)
		many.WriteString(`}`)
		if _, err := l.Plan(ctx, layer.NewDoc(engine.Call{}, many.Bytes())); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Plan on a done context returned %v", name, err)
		}
	}
	eng, _ := chain(t, engine.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := eng.Transform(ctx, engine.Call{}, in); !errors.Is(err, context.Canceled) {
		t.Errorf("Transform on a done context: %v", err)
	}
}

// A FastMCP dump whose text is 8,000,000 "[" deep: the fastmcp layer
// asked gjson whether the text was JSON, whose validator recursed once per
// level and ended the process with a stack overflow. The text is too deep
// to be a payload: it is the dump's results as a string, stored by the
// size net, and its bytes come back.
func TestFastMCPTextTooDeep(t *testing.T) {
	deep := strings.Repeat("[", 8_000_000) + strings.Repeat("]", 8_000_000)
	// an untyped block makes the dump no MCP result, which fastmcp maps
	in := `{"is_error":false,"content":[{"type":"text","text":"` + deep + `"},{"note":"untyped"}]}`
	eng, st := chain(t, engine.Config{})
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !gjson.ValidBytes(res.Raw) || len(res.Raw) > 60_000 {
		t.Fatalf("%d bytes out, valid %v", len(res.Raw), gjson.ValidBytes(res.Raw))
	}
	// fastmcp keeps the whole dump it replaced; the text is the results
	// the size net stored
	var found bool
	for _, a := range res.Artifacts {
		rc, _, err := st.Get(context.Background(), a.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		_, err = got.ReadFrom(rc)
		rc.Close()
		found = found || err == nil && got.String() == deep
	}
	if !found {
		t.Fatalf("no artifact holds the %d bytes of the text: %+v", len(deep), res.Artifacts)
	}
}
