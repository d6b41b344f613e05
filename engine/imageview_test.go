package engine_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/inspect"
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
func viewCall(v engine.ImageView) engine.Call {
	return engine.Call{Server: "shots", Tool: "capture", View: engine.View{Profile: "claude-code", Images: true, ImageView: v}}
}

// TestImageViewOverTheBudgetIsReferencedOnly: a 7000x7000 16-bit PNG
// (49 MP, under the 50 MP cap; 392 MB decoded) for a client that takes
// images, on an engine whose memory budget is 64 MiB, is not decoded: the
// result references the stored image, the text tells the model exactly
// why no image came, the refusal is an event, and nothing was reserved.
func TestImageViewOverTheBudgetIsReferencedOnly(t *testing.T) {
	mem := membudget.New(64 << 20)
	var refused []engine.Event
	eng := viewEngine(t, mem, &refused)
	res, err := eng.Transform(context.Background(), viewCall(engine.ImageView{}), imageResult(imagetest.PNG(7000, 7000, imagetest.RGBA, 16)))
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
	call := viewCall(engine.ImageView{MaxSide: 400, MaxWaitMS: 200})
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
