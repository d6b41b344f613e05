//go:build !race

// The race detector drops sync.Pool's items at random, and the scaler's
// band buffers live in one: what a view allocates is then no measure of
// what it holds. scripts/test.sh runs this file without it.

package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/imagetest"
)

// allocated is what f allocates (runtime.MemStats.TotalAlloc), garbage
// included: at least the most it holds at once.
func allocated(f func()) int64 {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return int64(b.TotalAlloc - a.TotalAlloc)
}

// TestViewReservesWhatItAllocates: for each kind of image the decoders
// read (PNG of every color type and depth, JPEG in color and gray, GIF,
// lossy and lossless WebP), and for one that fits as it is, what
// planView reserves before decoding covers everything making the view
// allocates, and is not far over it (the slack of decoders, scaler bands
// and encoders: 16 MiB).
func TestViewReservesWhatItAllocates(t *testing.T) {
	const w, h = 2000, 1500
	cases := map[string][]byte{}
	for _, c := range []struct {
		name             string
		colorType, depth int
	}{
		{"gray 8", imagetest.Gray, 8}, {"gray 16", imagetest.Gray, 16}, {"rgb 8", imagetest.RGB, 8}, {"rgb 16", imagetest.RGB, 16},
		{"rgba 8", imagetest.RGBA, 8}, {"rgba 16", imagetest.RGBA, 16}, {"gray+alpha 8", imagetest.GrayAlpha, 8},
		{"gray+alpha 16", imagetest.GrayAlpha, 16}, {"paletted", imagetest.Paletted, 8},
	} {
		cases["PNG "+c.name] = imagetest.PNG(w, h, c.colorType, c.depth)
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, noisy(w, h), &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	cases["JPEG 4:2:0"] = bytes.Clone(b.Bytes())
	b.Reset()
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	cases["JPEG gray"] = bytes.Clone(b.Bytes())
	b.Reset()
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	cases["GIF"] = bytes.Clone(b.Bytes())
	for _, f := range []string{"blue-purple-pink.lossy.webp", "gopher-doc.1bpp.lossless.webp"} {
		webp, err := os.ReadFile(filepath.Join("..", "inspect", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		cases["WebP "+f] = webp
	}
	cases["as it is"] = noisyPNG(t, 40, 30)
	for name, img := range cases {
		t.Run(name, func(t *testing.T) {
			v := imageViewDefaults(ImageView{})
			if strings.HasPrefix(name, "WebP") {
				v.MaxSide = 64 // the files are 100 pixels high
			}
			raw := []byte(base64.StdEncoding.EncodeToString(img))
			p, err := planView(raw, v)
			if err != nil {
				t.Fatal(err)
			}
			var view *viewImage
			got := allocated(func() { view, err = downscale(context.Background(), nil, raw, v) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%dx%d view): reserved %d bytes, allocated %d", p.what, view.w, view.h, p.need, got)
			if got > p.need || p.need-got > 16<<20 {
				t.Errorf("%s (%dx%d view): reserved %d bytes, allocated %d", p.what, view.w, view.h, p.need, got)
			}
		})
	}
}
