package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// screenshotPNG is a 2560x1600 PNG of about 2 MB, made once: a gradient
// page with a band of noise (what compresses worst in a screenshot).
var screenshotPNG = sync.OnceValue(func() []byte {
	const w, h = 2560, 1600
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	var x uint32 = 2463534242
	for y := range h {
		for i := range w {
			c := color.NRGBA{uint8(i * 255 / w), uint8(y * 255 / h), 200, 255}
			if y >= 400 && y < 640 {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				c = color.NRGBA{uint8(x), uint8(x >> 8), uint8(x >> 16), 255}
			}
			img.SetNRGBA(i, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
})

// The Playwright case, image half: a client whose profile takes images
// (claude-code) sees the screenshot as a downscaled native image block,
// with the original stored byte-exact and named; a client that does not
// sees the reference only. Both results say what they kept out: for
// claude-code bytes and no tokens, since a vision model scales the
// 2560x1600 original to the copy's size itself and bills its pixels.
func TestScreenshotFittedToClient(t *testing.T) {
	st := memstore.New(memstore.Config{})
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"playwright": playwrightUpstream(t, "")}, Engine: engine.Options{Store: st}})
	waitFor(t, "the upstream is ready", func() bool { return g.Status()[0].State == upstream.StateReady })
	orig := screenshotPNG()
	t.Logf("screenshot: 2560x1600, %d bytes", len(orig))

	open := func(name string) *client {
		c := connectStateless(t, g)
		res := c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+name+`","version":"2.1.0"}}`)
		if e := gjson.GetBytes(res, "error"); e.Exists() {
			t.Fatalf("initialize: %s", e.Raw)
		}
		c.notify("notifications/initialized", "")
		return c
	}
	storedOriginal := func(t *testing.T, res gjson.Result, tokensKept bool) {
		t.Helper()
		id := res.Get(`_meta.mcpx/artifacts.0.artifact.id`).String()
		rc, _, err := st.Get(context.Background(), id, nil)
		if err != nil {
			t.Fatalf("the original %q: %v (%s)", id, err, res.Get("_meta").Raw)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, orig) {
			t.Fatalf("the stored original differs: %d bytes, want %d", len(got), len(orig))
		}
		text := res.Get(`content.#(type=="text")#.text`).String()
		if !strings.Contains(text, "mcpx://artifacts/"+id) {
			t.Errorf("the model's text does not name the artifact: %s", text)
		}
		if k := res.Get(`_meta.mcpx/kept_out`); k.Get("bytes").Int() <= 0 || (k.Get("tokens").Int() > 0) != tokensKept || k.Get("artifacts").Int() != 1 {
			t.Errorf("kept_out %s", k.Raw)
		}
	}

	t.Run("claude-code gets a downscaled image", func(t *testing.T) {
		res := open("claude-code").result("tools/call", toolCall("browser_take_screenshot", `{}`))
		blocks := res.Get("content").Array()
		var img gjson.Result
		for _, b := range blocks {
			if b.Get("type").String() == "image" {
				img = b
			}
		}
		if !img.Exists() {
			t.Fatalf("no image block: %.600s", res.Raw)
		}
		data, err := base64.StdEncoding.DecodeString(img.Get("data").String())
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > imageview.DefaultMaxBytes {
			t.Errorf("the copy is %d bytes, over %d", len(data), imageview.DefaultMaxBytes)
		}
		dec, format, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("the copy does not decode: %v", err)
		}
		if b := dec.Bounds(); b.Dx() != 1568 || b.Dy() != 980 || "image/"+format != img.Get("mimeType").String() {
			t.Errorf("copy %dx%d %s (mimeType %s), want 1568x980", b.Dx(), b.Dy(), format, img.Get("mimeType").String())
		}
		if v := res.Get(`_meta.mcpx/artifacts.0.view`); v.Get("width").Int() != 1568 || v.Get("original_width").Int() != 2560 {
			t.Errorf("view %s", v.Raw)
		}
		storedOriginal(t, res, false)
		t.Logf("claude-code: %d bytes of result, copy %s %d bytes, kept_out %s", len(res.Raw), format, len(data), res.Get(`_meta.mcpx/kept_out`).Raw)
	})

	t.Run("another client gets the reference", func(t *testing.T) {
		res := open("some-agent").result("tools/call", toolCall("browser_take_screenshot", `{}`))
		if n := len(res.Get(`content.#(type=="image")#`).Array()); n != 0 {
			t.Fatalf("%d image blocks for a client that takes none", n)
		}
		storedOriginal(t, res, true)
		t.Logf("some-agent: %d bytes of result, kept_out %s", len(res.Raw), res.Get(`_meta.mcpx/kept_out`).Raw)
	})

	t.Run("a stateless request names its client in _meta", func(t *testing.T) {
		c := connectStateless(t, g)
		raw := c.call("tools/call", statelessParams(toolCall("browser_take_screenshot", `{}`), `,"io.modelcontextprotocol/clientInfo":{"name":"Claude-Code","version":"2"}`))
		res := gjson.GetBytes(raw, "result")
		if n := len(res.Get(`content.#(type=="image")#`).Array()); n != 1 {
			t.Fatalf("%d image blocks, want 1: %.400s", n, raw)
		}
	})
}

// artifacts_query's region mode: a client that takes images looks at part
// of a stored screenshot at full size, as an image block with a sentence
// naming the region, in both protocol eras; a client that takes none is
// told so, and what it can do instead.
func TestArtifactQueryRegion(t *testing.T) {
	st := memstore.New(memstore.Config{})
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"playwright": playwrightUpstream(t, "")}, Engine: engine.Options{Store: st}})
	waitFor(t, "the upstream is ready", func() bool { return g.Status()[0].State == upstream.StateReady })
	open := func(name string) *client {
		c := connectStateless(t, g)
		c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}`)
		c.notify("notifications/initialized", "")
		return c
	}
	c := open("claude-code")
	shot := c.result("tools/call", toolCall("browser_take_screenshot", `{}`))
	id := shot.Get(`_meta.mcpx/artifacts.0.artifact.id`).String()
	args := `{"id":"mcpx://artifacts/` + id + `","region":{"x":100,"y":400,"width":800,"height":240}}`
	check := func(t *testing.T, res gjson.Result) {
		t.Helper()
		img, text := res.Get("content.0"), res.Get("content.1.text").String()
		data, err := base64.StdEncoding.DecodeString(img.Get("data").String())
		if res.Get("isError").Bool() || img.Get("type").String() != "image" || err != nil {
			t.Fatalf("no image block: %.400s", res.Raw)
		}
		dec, format, err := image.Decode(bytes.NewReader(data))
		if err != nil || dec.Bounds().Dx() != 800 || dec.Bounds().Dy() != 240 || "image/"+format != img.Get("mimeType").String() {
			t.Fatalf("the region's image: %v %s (%v)", dec.Bounds(), format, err)
		}
		if want := "Region 100, 400, 800, 240 (x, y, width and height in pixels) of the 2560x1600 image " + id + ", as a 800x240 "; !strings.HasPrefix(text, want) || !strings.HasSuffix(text, " at full size") {
			t.Errorf("text %q, want it to start %q", text, want)
		}
	}
	check(t, c.result("tools/call", toolCall("artifacts_query", args)))
	t.Run("stateless", func(t *testing.T) {
		// a stateless request names its client in _meta
		const meta = `,"io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2"}`
		sc := connectStateless(t, g)
		sc.call("tools/call", statelessParams(toolCall("browser_take_screenshot", `{}`), meta))
		raw := sc.call("tools/call", statelessParams(toolCall("artifacts_query", args), meta))
		check(t, gjson.GetBytes(raw, "result"))
	})
	t.Run("a client that takes no images", func(t *testing.T) {
		res := open("some-agent").result("tools/call", toolCall("artifacts_query", args))
		if want := "region: this client takes no image content"; !res.Get("isError").Bool() || !strings.Contains(res.Get("content.0.text").String(), want) {
			t.Errorf("got %.300s, want a tool error saying %q", res.Raw, want)
		}
	})
}

// artifacts_query's page with view "image": a client that takes images
// sees a stored PDF's page as an image block (a scan has no text to
// read), with a sentence naming the page; a client that takes none is
// told so, and what it can ask instead.
func TestArtifactQueryPageImage(t *testing.T) {
	st := memstore.New(memstore.Config{})
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"docs": stubServer(t)}, Engine: engine.Options{Store: st}})
	waitFor(t, "the upstream is ready", func() bool { return g.Status()[0].State == upstream.StateReady })
	open := func(name string) *client {
		c := connectStateless(t, g)
		c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}`)
		c.notify("notifications/initialized", "")
		return c
	}
	pdf, err := os.ReadFile(filepath.Join("..", "inspect", "testdata", "pdf", "scan.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	c := open("claude-code")
	res := c.result("tools/call", toolCall("echo", `{"v":"`+base64.StdEncoding.EncodeToString(pdf)+`"}`))
	id := res.Get(`_meta.mcpx/artifacts.0.artifact.id`).String()
	if id == "" || res.Get(`_meta.mcpx/artifacts.0.artifact.mime_type`).String() != "application/pdf" {
		t.Fatalf("the PDF is not an artifact (the test's premise): %.600s", res.Raw)
	}
	args := `{"id":"` + id + `","page":1,"view":"image"}`
	res = c.result("tools/call", toolCall("artifacts_query", args))
	img, text := res.Get("content.0"), res.Get("content.1.text").String()
	data, err := base64.StdEncoding.DecodeString(img.Get("data").String())
	if res.Get("isError").Bool() || img.Get("type").String() != "image" || err != nil {
		t.Fatalf("no image block: %.400s", res.Raw)
	}
	dec, format, err := image.Decode(bytes.NewReader(data))
	if err != nil || "image/"+format != img.Get("mimeType").String() || max(dec.Bounds().Dx(), dec.Bounds().Dy()) != imageview.DefaultMaxSide {
		t.Fatalf("the page's image: %v %s (%v)", dec.Bounds(), format, err)
	}
	if want := "Page 1 of 2 of the PDF " + id + ", as a "; !strings.HasPrefix(text, want) || !strings.HasSuffix(text, "\n[cut: page 1 of 2 shown; ask for page 2]") {
		t.Errorf("text %q, want it to start %q", text, want)
	}
	res = open("some-agent").result("tools/call", toolCall("artifacts_query", args))
	if want := `view "image": this client takes no image content`; !res.Get("isError").Bool() || !strings.Contains(res.Get("content.0.text").String(), want) {
		t.Errorf("got %.300s, want a tool error saying %q", res.Raw, want)
	}
	res = c.result("tools/call", toolCall("artifacts_query", `{"id":"`+id+`","view":"image"}`))
	if want := `view: want "text" or "image", with page`; !res.Get("isError").Bool() || !strings.Contains(res.Get("content.0.text").String(), want) {
		t.Errorf("view without page: %.300s, want %q", res.Raw, want)
	}
}
