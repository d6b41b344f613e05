package imagetest

import (
	"bytes"
	"compress/zlib"
	"image"
	"image/color"
	"image/png"
	"io"
	"testing"
	"time"
)

// Every color type and depth decodes with image/png to its size, every
// pixel zero.
func TestPNGDecodes(t *testing.T) {
	for _, c := range []struct{ colorType, depth int }{
		{Gray, 8}, {Gray, 16}, {RGB, 8}, {RGB, 16}, {Paletted, 8}, {GrayAlpha, 8}, {GrayAlpha, 16}, {RGBA, 8}, {RGBA, 16},
	} {
		img, err := png.Decode(bytes.NewReader(PNG(301, 7, c.colorType, c.depth)))
		if err != nil {
			t.Fatalf("color type %d, depth %d: %v", c.colorType, c.depth, err)
		}
		if b := img.Bounds(); b != image.Rect(0, 0, 301, 7) {
			t.Fatalf("color type %d, depth %d: bounds %v", c.colorType, c.depth, b)
		}
		zero := img.ColorModel().Convert(color.RGBA64{A: 0xffff}) // black
		if c.colorType&4 != 0 {
			zero = img.ColorModel().Convert(color.RGBA64{}) // transparent
		}
		if c.colorType == Paletted {
			zero = img.(*image.Paletted).Palette[0]
		}
		for y := range 7 {
			for x := range 301 {
				if got := img.At(x, y); got != zero {
					t.Fatalf("color type %d, depth %d: pixel %d,%d is %v, want %v", c.colorType, c.depth, x, y, got, zero)
				}
			}
		}
	}
}

// A 7000x7000 16-bit RGBA image, 392 MB of rows, takes milliseconds to
// make and under 3 MiB to hold; a 2000x2000 one's stream inflates to its
// rows exactly, with a valid checksum.
func TestPNGLargeIsCheap(t *testing.T) {
	start := time.Now()
	b := PNG(7000, 7000, RGBA, 16)
	took := time.Since(start)
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 7000 || cfg.Height != 7000 {
		t.Fatalf("%+v, %v", cfg, err)
	}
	t.Logf("%d bytes in %v", len(b), took)
	if len(b) > 3<<20 || took > 5*time.Second {
		t.Errorf("%d bytes in %v, want under 3 MiB in well under 5 s", len(b), took)
	}
	b = PNG(2000, 2000, RGBA, 16)
	idat := b[bytes.Index(b, []byte("IDAT"))+4 : bytes.Index(b, []byte("IEND"))-8]
	z, err := zlib.NewReader(bytes.NewReader(idat))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, z)
	if err != nil || n != 2000*(1+2000*8) {
		t.Fatalf("inflated %d bytes, %v; want %d", n, err, 2000*(1+2000*8))
	}
}
