package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/inspect"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/internal/imagetest"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// viewEngine is an engine that stores content.0 in block form, as the
// typedcontent layer does with an image, drawing on mem; it records
// work_refused events in refused.
func viewEngine(t *testing.T, mem *membudget.Budget, refused *[]engine.Event) *engine.Engine {
	t.Helper()
	reg := layer.NewRegistry()
	l := fixed{{Target: layer.TargetResult, Path: "content.0", Form: layer.FormBlock, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return l, nil }})
	var mu sync.Mutex
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{Chain: []string{"test"}}, Memory: mem,
		Listener: engine.ListenerFunc(func(ev engine.Event) {
			if ev.Type == engine.EventWorkRefused && refused != nil {
				mu.Lock()
				*refused = append(*refused, ev)
				mu.Unlock()
			}
		})})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// imageResult is a tool result of one image block.
func imageResult(img []byte) []byte {
	return []byte(`{"content":[{"type":"image","mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(img) + `"}]}`)
}

// viewCall is a call from a client that takes images, as the gateway
// passes for claude-code.
func viewCall(v imageview.Limits) engine.Call {
	return engine.Call{Server: "shots", Tool: "capture", View: engine.View{Profile: "claude-code", Images: true, ImageView: v}}
}

// TestImageViewOverTheBudgetIsReferencedOnly: a 7000x7000 16-bit PNG
// (49 MP, under the 50 MP cap; 392 MB decoded) for a client that takes
// images, on an engine whose memory budget is 64 MiB, is not decoded: the
// result references the stored image, the text tells the model exactly
// why no image came, the refusal is an event, and nothing was reserved.
func TestImageViewOverTheBudgetIsReferencedOnly(t *testing.T) {
	t.Parallel()
	mem := membudget.New(64 << 20)
	var refused []engine.Event
	eng := viewEngine(t, mem, &refused)
	res, err := eng.Transform(context.Background(), viewCall(imageview.Limits{}), imageResult(imagetest.PNG(7000, 7000, imagetest.RGBA, 16)))
	if err != nil {
		t.Fatal(err)
	}
	out := gjson.ParseBytes(res.Raw)
	if n := len(out.Get(`content.#(type=="image")#`).Array()); n != 0 {
		t.Fatalf("%d image blocks; want the image referenced only: %.600s", n, res.Raw)
	}
	const why = "No image view: decoding this 7000x7000 16-bit PNG takes 467.4 MB, more than this server's whole work memory (67.1 MB, serve.limits.max_work_bytes)."
	text := out.Get("content.0.text").String()
	if !strings.HasSuffix(text, "\n"+why) || !strings.Contains(text, "mcpx://artifacts/") {
		t.Fatalf("text %q\nwant the summary naming the artifact, then %q", text, why)
	}
	if got := out.Get(`_meta.mcpx/artifacts.0.no_view`).String(); got+"." != strings.TrimPrefix(why, "No image view: ") {
		t.Errorf("_meta no_view %q", got)
	}
	if out.Get("content.1.type").String() != "resource_link" || len(res.Artifacts) != 1 || res.Artifacts[0].SizeBytes == 0 {
		t.Errorf("the stored image is not referenced: %.600s", res.Raw)
	}
	if len(refused) != 1 || refused[0].Path != "content.0" || refused[0].Layer != "test" || !strings.Contains(refused[0].Error, "image view: decoding this 7000x7000 16-bit PNG") {
		t.Errorf("work_refused events %+v", refused)
	}
	// The summary's inspection read the header; nothing was reserved
	// for the decode.
	if want := (inspect.Limits{}).Footprint("image", res.Artifacts[0].SizeBytes); mem.Peak() != want {
		t.Errorf("the budget's peak is %d, want %d (the summary's inspection alone)", mem.Peak(), want)
	}
}

// TestImageViewWaitsForTheBudget: while other work holds the budget, a
// view waits max_wait_ms, then the image is referenced only, with a
// sentence saying what the view needed, what was free and how long it
// waited; once the budget is free the same call gets its view.
func TestImageViewWaitsForTheBudget(t *testing.T) {
	mem := membudget.New(200 << 20)
	hold, err := mem.Reserve(context.Background(), 190<<20, "other work")
	if err != nil {
		t.Fatal(err)
	}
	var refused []engine.Event
	eng := viewEngine(t, mem, &refused)
	in := imageResult(imagetest.PNG(800, 600, imagetest.RGBA, 16))
	call := viewCall(imageview.Limits{MaxSide: 400, MaxWaitMS: 200})
	start := time.Now()
	res, err := eng.Transform(context.Background(), call, in)
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	out := gjson.ParseBytes(res.Raw)
	const why = "\nNo image view: decoding this 800x600 16-bit PNG takes 27.3 MB, and other work held all but 10.5 MB of this server's 209.7 MB of work memory (serve.limits.max_work_bytes) for the 200ms a view waits; call the tool again for an image view."
	if n := len(out.Get(`content.#(type=="image")#`).Array()); n != 0 || !strings.HasSuffix(out.Get("content.0.text").String(), why) {
		t.Fatalf("%d image blocks, text %q; want none and %q", n, out.Get("content.0.text").String(), why)
	}
	if waited < 200*time.Millisecond || len(refused) != 1 || mem.Waits() != 1 {
		t.Errorf("waited %v, %d work_refused events, %d waits; want at least 200ms, 1 and 1", waited, len(refused), mem.Waits())
	}
	hold()
	res, err = eng.Transform(context.Background(), call, in)
	if err != nil {
		t.Fatal(err)
	}
	out = gjson.ParseBytes(res.Raw)
	if img := out.Get("content.0"); img.Get("type").String() != "image" || !strings.Contains(out.Get("content.1.text").String(), "The image above is a 400x300 copy") {
		t.Fatalf("no view once the budget is free: %.400s", res.Raw)
	}
	if want := 190<<20 + (inspect.Limits{}).Footprint("image", res.Artifacts[0].SizeBytes); mem.Peak() != want || mem.InUse() != 0 {
		t.Errorf("peak %d, in use %d; want %d (the holder and an inspection) and 0", mem.Peak(), mem.InUse(), want)
	}
}

// TestImageViewSaysWhyNone: whenever a client that takes images gets no
// image view, the text under the summary says why in the client's terms
// (which limit, and its value) and, when the image is only too large for
// a whole view, how to see part of it: artifacts_query's region mode.
func TestImageViewSaysWhyNone(t *testing.T) {
	t.Parallel()
	eng := viewEngine(t, nil, nil)
	var noise bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 300, 200))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	if err := png.Encode(&noise, img); err != nil {
		t.Fatal(err)
	}
	small := imagetest.PNG(400, 300, imagetest.RGB, 8)
	for _, c := range []struct {
		name string
		img  []byte
		view imageview.Limits
		why  string
	}{
		{"a full-page screenshot over max_source_pixels", imagetest.PNG(1280, 46261, imagetest.RGBA, 8), imageview.Limits{},
			"this 1280x46261 PNG has 59,214,080 pixels, more than the 50,000,000 an image view decodes (image_view.max_source_pixels); ask artifacts_query for a region of it to see part of it at full size (x, y, width and height in its pixels, e.g. 0, 0, 1280, 1568)"},
		{"over max_source_bytes", small, imageview.Limits{MaxSourceBytes: 1000},
			"this 400x300 PNG takes " + humanize.Bytes(int64(len(small))) + ", more than the 1.0 kB an image view reads (image_view.max_source_bytes); ask artifacts_query for a region of it to see part of it at full size (x, y, width and height in its pixels, e.g. 0, 0, 400, 300)"},
		{"no copy fits max_bytes", noise.Bytes(), imageview.Limits{MaxBytes: 1000},
			"no copy of this 300x200 8-bit PNG fits the 1.0 kB an image view may take (image_view.max_bytes); ask artifacts_query for a region of it to see part of it at full size (x, y, width and height in its pixels, e.g. 0, 0, 300, 200)"},
		{"undecodable", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"), imageview.Limits{},
			"its bytes do not decode as an image (unexpected EOF)"},
		{"a format no view decodes", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`), imageview.Limits{},
			"it is not a PNG, JPEG, GIF or WebP image, the formats an image view decodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := eng.Transform(context.Background(), viewCall(c.view), imageResult(c.img))
			if err != nil {
				t.Fatal(err)
			}
			out := gjson.ParseBytes(res.Raw)
			if n := len(out.Get(`content.#(type=="image")#`).Array()); n != 0 {
				t.Fatalf("%d image blocks", n)
			}
			text := out.Get("content.0.text").String()
			if want := "\nNo image view: " + c.why + "."; !strings.HasSuffix(text, want) || !strings.Contains(text, "mcpx://artifacts/") {
				t.Errorf("text %q\nwant the summary naming the artifact, then %q", text, want)
			}
			if got := out.Get(`_meta.mcpx/artifacts.0.no_view`).String(); got != c.why {
				t.Errorf("_meta no_view %q, want %q", got, c.why)
			}
		})
	}
}

// TestKeptOutCountsImagesByPixels: for a client that takes images, an
// image counts what a vision model bills for it (its pixels, as the model
// would scale it: at most 1568 on the long side and about 1,600 tokens),
// both the original it would have been sent and the copy it gets, not its
// base64 as text. A 2400x1600 screenshot shown as a 1568x1045 copy keeps
// nothing out in tokens (the model sees as many pixels either way); what
// the result keeps out is the stored text, less the summaries.
func TestKeptOutCountsImagesByPixels(t *testing.T) {
	t.Parallel()
	reg := layer.NewRegistry()
	l := fixed{
		{Target: layer.TargetResult, Path: "content.0", Form: layer.FormBlock, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
		{Target: layer.TargetResult, Path: "content.1", Form: layer.FormBlock, Action: layer.ActionArtifact},
	}
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return l, nil }})
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{Chain: []string{"test"}}})
	if err != nil {
		t.Fatal(err)
	}
	var noise bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 2400, 1600))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range img.Pix[:len(img.Pix)/8] { // a band of noise: a screenshot's photo
		img.Pix[i] = uint8(rng.Uint32())
	}
	if err := png.Encode(&noise, img); err != nil {
		t.Fatal(err)
	}
	prose := strings.Repeat("The quarterly report says revenue grew in every region. ", 700)
	in := []byte(`{"content":[{"type":"image","mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(noise.Bytes()) + `"},{"type":"text","text":"` + prose + `"}]}`)
	res, err := eng.Transform(context.Background(), viewCall(imageview.Limits{}), in)
	if err != nil {
		t.Fatal(err)
	}
	out := gjson.ParseBytes(res.Raw)
	if v := out.Get(`_meta.mcpx/artifacts.0.view`); v.Get("width").Int() != 1568 || v.Get("height").Int() != 1045 {
		t.Fatalf("view %s", v.Raw)
	}
	proseTokens := engine.EstimateTokens([]byte(prose))
	kept := out.Get(`_meta.mcpx/kept_out.tokens`).Int()
	t.Logf("kept out %s; the prose alone is %d tokens, the PNG %d bytes", out.Get(`_meta.mcpx/kept_out`).Raw, proseTokens, noise.Len())
	if kept > int64(proseTokens) || kept < int64(proseTokens)-400 || int(kept) != res.KeptOutTokens {
		t.Errorf("kept out %d tokens (Result %d); want the stored prose's %d less the summaries (at most 400)", kept, res.KeptOutTokens, proseTokens)
	}
}
