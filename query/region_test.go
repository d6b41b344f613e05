package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/internal/imagetest"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestRunRegion: the region mode answers an image view of part of a
// stored image, at full size when it fits the client's view, fitted to it
// otherwise, reserving what the decode holds from the process's budget;
// a full-page screenshot too large for a whole view (59 MP, over the
// 50 MP a view decodes) can be read a screen at a time.
func TestRunRegion(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ctx := context.Background()
	src := image.NewNRGBA(image.Rect(0, 0, 400, 3000))
	for y := range 3000 {
		for x := range 400 {
			src.SetNRGBA(x, y, color.NRGBA{uint8(y / 1000 * 100), 0, 0, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, src); err != nil {
		t.Fatal(err)
	}
	tall := put(t, st, "image/png", b.Bytes())
	mem := membudget.New(1 << 30)
	a, err := Run(ctx, st, tall, Request{Region: &Region{X: 0, Y: 1000, Width: 400, Height: 300}}, Budget{Memory: mem})
	if err != nil || a.Image == nil {
		t.Fatalf("region: %+v %v", a, err)
	}
	if a.Image.Width != 400 || a.Image.Height != 300 || a.Image.MIMEType != "image/png" {
		t.Errorf("region image %dx%d %s", a.Image.Width, a.Image.Height, a.Image.MIMEType)
	}
	if want := fmt.Sprintf("Region 0, 1000, 400, 300 (x, y, width and height in pixels) of the 400x3000 image %s, as a 400x300 PNG (%s) at full size", tall.ID, humanize.Bytes(int64(len(a.Image.Data)))); a.Text != want {
		t.Errorf("text %q\nwant %q", a.Text, want)
	}
	img, _, err := image.Decode(bytes.NewReader(a.Image.Data))
	if r, _, _, _ := img.At(5, 5).RGBA(); err != nil || r>>8 != 100 {
		t.Errorf("the view shows red %d (%v), want the second band's 100", r>>8, err)
	}
	if mem.Peak() == 0 || mem.InUse() != 0 {
		t.Errorf("budget peak %d, in use %d: the decode was not reserved, or not given back", mem.Peak(), mem.InUse())
	}
	// Larger than the view: fitted to its long side, and said so.
	a, err = Run(ctx, st, tall, Request{Region: &Region{Y: 0, Height: 3000}}, Budget{ImageView: imageview.Limits{MaxSide: 600}})
	if err != nil || a.Image.Width != 80 || a.Image.Height != 600 || !strings.HasSuffix(a.Text, "scaled down to fit the view; ask for a smaller region to see it at full size") {
		t.Errorf("fitted region: %+v %v", a.Image, err)
	}
	// A full-page screenshot over max_source_pixels: a screen of it.
	page := put(t, st, "image/png", imagetest.PNG(1280, 46261, imagetest.RGBA, 8))
	a, err = Run(ctx, st, page, Request{Region: &Region{Width: 1280, Height: 1568}}, Budget{})
	if err != nil || a.Image == nil || a.Image.Width != 1280 || a.Image.Height != 1568 {
		t.Fatalf("a screen of a 59 MP page: %+v %v", a, err)
	}
	for _, c := range []struct {
		name string
		ref  func() (r Request)
		b    Budget
		want error
		msg  string
	}{
		{"outside", func() Request { return Request{Region: &Region{Y: 5000, Width: 10, Height: 10}} }, Budget{}, ErrOutOfRange, "lies outside this 400x3000 image"},
		{"negative", func() Request { return Request{Region: &Region{X: -1, Width: 10}} }, Budget{}, ErrBadRequest, "not negative"},
		{"over the query's memory", func() Request { return Request{Region: &Region{Width: 10, Height: 10}} }, Budget{MaxMemory: 1 << 20}, ErrBudget, "decoding this 400x3000 8-bit PNG for a region takes"},
	} {
		if _, err := Run(ctx, st, tall, c.ref(), c.b); !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %v saying %q", c.name, err, c.want, c.msg)
		}
	}
	text := put(t, st, "text/plain", []byte("hello"))
	if _, err := Run(ctx, st, text, Request{Region: &Region{Width: 1}}, Budget{}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "not an image") {
		t.Errorf("region of text: %v", err)
	}
}
