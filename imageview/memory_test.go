//go:build !race

// The race detector drops sync.Pool's items at random, and the scaler's
// band buffers live in one: what a view allocates is then no measure of
// what it holds. scripts/test.sh runs this file without it.

package imageview

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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
// NewPlan reserves before decoding covers everything making the view
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
			var v Limits
			if strings.HasPrefix(name, "WebP") {
				v.MaxSide = 64 // the files are 100 pixels high
			}
			p, err := NewPlan(bytesSource(img), v, image.Rectangle{})
			if err != nil {
				t.Fatal(err)
			}
			var view *Image
			got := allocated(func() { view, err = p.Make() })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%dx%d view): reserved %d bytes, allocated %d", p.What(), view.Width, view.Height, p.Need(), got)
			if got > p.Need() || p.Need()-got > 16<<20 {
				t.Errorf("%s (%dx%d view): reserved %d bytes, allocated %d", p.What(), view.Width, view.Height, p.Need(), got)
			}
		})
	}
}

// TestRegionHoldsWhatItReserves: a region's view copies its region out
// of the decoded image and lets the decode go before fitting the copy, so
// the heap's peak while one is made stays within Need, which counts the
// decode and the fitting as not held at once: for a 1000x800 region of a
// 6000x4000 16-bit PNG (192 MB decoded) fitted to 600x480, 196.2 MB
// (measured: the heap's peak grew by 195.4 MB), where holding both would
// take 220.2 MB.
func TestRegionHoldsWhatItReserves(t *testing.T) {
	img := imagetest.PNG(6000, 4000, imagetest.RGBA, 16)
	p, err := NewPlan(bytesSource(img), Limits{MaxSide: 600}, image.Rect(100, 100, 1100, 900))
	if err != nil {
		t.Fatal(err)
	}
	heapNow := func() int64 {
		// ReadMemStats stops the world and counts every cache: exact,
		// where runtime/metrics may lag a large allocation.
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	// Two collections empty sync.Pool (the scaler's bands of the tests
	// before), which Make's own collection would otherwise free.
	runtime.GC()
	runtime.GC()
	base := heapNow()
	var peak int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, heapNow())
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	v, err := p.Make()
	close(stop)
	<-sampled
	if err != nil || v.Width != 600 || v.Height != 480 {
		t.Fatalf("view %+v, %v", v, err)
	}
	held := peak - base
	decode := int64(6000 * 4000 * 8)
	t.Logf("%s, region 1000x800 fitted to 600x480: reserved %d bytes, the heap's peak grew by %d", p.What(), p.Need(), held)
	if held > p.Need() || held < decode {
		t.Errorf("the heap's peak grew by %d bytes; want at least the decode (%d) and at most the reservation (%d)", held, decode, p.Need())
	}
}
