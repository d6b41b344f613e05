package imageview

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"testing"
)

// bytesSource is an image's bytes as a Source.
func bytesSource(b []byte) Source {
	return Source{Size: int64(len(b)), Open: func() io.Reader { return bytes.NewReader(b) }}
}

// noisy is a w×h image whose pixels do not compress.
func noisy(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	var x uint32 = 88172645
	for i := 0; i < len(img.Pix); i += 4 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(x), uint8(x>>8), uint8(x>>16), 255
	}
	return img
}

// noisyPNG is a w×h PNG whose pixels do not compress.
func noisyPNG(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, noisy(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngHeaderOnly is a PNG signature and an IHDR declaring w×h, with no
// pixel data: what a hostile server sends to make a decoder allocate.
func pngHeaderOnly(w, h uint32) []byte {
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr[:]...)
	out := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d")
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
}

// view plans and makes the view of img.
func view(img []byte, l Limits, region image.Rectangle) (*Image, error) {
	p, err := NewPlan(bytesSource(img), l, region)
	if err != nil {
		return nil, err
	}
	return p.Make()
}

func TestView(t *testing.T) {
	t.Parallel()
	t.Run("a 30000x30000 header is refused before decoding", func(t *testing.T) {
		_, err := view(pngHeaderOnly(30000, 30000), Limits{}, image.Rectangle{})
		var r *Refusal
		if !errors.Is(err, ErrTooLarge) || !errors.As(err, &r) || r.Width != 30000 ||
			r.Reason != "this 30000x30000 PNG has 900,000,000 pixels, more than the 50,000,000 an image view decodes (image_view.max_source_pixels)" {
			t.Fatalf("got %v, want ErrTooLarge saying the pixel count", err)
		}
	})
	t.Run("an image that fits goes as it is", func(t *testing.T) {
		small := noisyPNG(t, 40, 30)
		v, err := view(small, Limits{}, image.Rectangle{})
		if err != nil || !bytes.Equal(v.Data, small) || v.Width != 40 || v.MIMEType != "image/png" || v.Region != image.Rect(0, 0, 40, 30) {
			t.Fatalf("got %+v, %v", v, err)
		}
	})
	t.Run("a noisy image too big as PNG becomes JPEG under the byte cap", func(t *testing.T) {
		v, err := view(noisyPNG(t, 1200, 800), Limits{MaxSide: 600, MaxBytes: 200 << 10}, image.Rectangle{})
		if err != nil {
			t.Fatal(err)
		}
		if v.MIMEType != "image/jpeg" || len(v.Data) > 200<<10 || v.Width > 600 || v.OrigWidth != 1200 {
			t.Fatalf("%s %dx%d %d bytes (from %dx%d)", v.MIMEType, v.Width, v.Height, len(v.Data), v.OrigWidth, v.OrigHeight)
		}
		img, _, err := image.Decode(bytes.NewReader(v.Data))
		if err != nil || img.Bounds().Dx() != v.Width || img.Bounds().Dy() != v.Height {
			t.Fatalf("the copy does not decode to %dx%d: %v", v.Width, v.Height, err)
		}
	})
	t.Run("undecodable bytes are refused", func(t *testing.T) {
		if _, err := view([]byte("not an image at all"), Limits{}, image.Rectangle{}); !errors.Is(err, ErrUndecodable) {
			t.Fatalf("got %v, want ErrUndecodable", err)
		}
	})
}

// TestViewOfARegion: a region of an image is cut from the original at
// full size when it fits the view, fitted to it when it does not, and
// refused, saying the image's size, when it lies outside the image.
func TestViewOfARegion(t *testing.T) {
	t.Parallel()
	src := image.NewNRGBA(image.Rect(0, 0, 300, 4000))
	for y := range 4000 {
		for x := range 300 {
			src.SetNRGBA(x, y, color.NRGBA{uint8(y / 1000 * 60), 0, 0, 255}) // a band of red per 1000 rows
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, src); err != nil {
		t.Fatal(err)
	}
	tall := b.Bytes()
	v, err := view(tall, Limits{}, image.Rect(0, 2000, 300, 2100))
	if err != nil || v.Width != 300 || v.Height != 100 || v.Region != image.Rect(0, 2000, 300, 2100) || v.OrigHeight != 4000 {
		t.Fatalf("a region that fits: %+v, %v", v, err)
	}
	img, _, err := image.Decode(bytes.NewReader(v.Data))
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _, _ := img.At(10, 50).RGBA(); r>>8 != 120 {
		t.Errorf("the region shows red %d, want the third band's 120", r>>8)
	}
	v, err = view(tall, Limits{MaxSide: 500}, image.Rect(0, 0, 300, 3000))
	if err != nil || v.Width != 50 || v.Height != 500 || v.Region != image.Rect(0, 0, 300, 3000) {
		t.Fatalf("a region fitted to the view: %+v, %v", v, err)
	}
	v, err = view(tall, Limits{}, image.Rect(200, 3900, 600, 4200))
	if err != nil || v.Region != image.Rect(200, 3900, 300, 4000) || v.Width != 100 || v.Height != 100 {
		t.Fatalf("a region past the edges is clipped to the image: %+v, %v", v, err)
	}
	_, err = view(tall, Limits{}, image.Rect(0, 5000, 100, 5100))
	if !errors.Is(err, ErrOutside) || err.Error() != "the region 0, 5000, 100, 100 (x, y, width, height) lies outside this 300x4000 image" {
		t.Fatalf("a region outside: %v", err)
	}
}

func BenchmarkViewScreenshot(b *testing.B) {
	img := image.NewNRGBA(image.Rect(0, 0, 2560, 1600))
	for y := range 1600 {
		for x := range 2560 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	for b.Loop() {
		if _, err := view(buf.Bytes(), Limits{}, image.Rectangle{}); err != nil {
			b.Fatal(err)
		}
	}
}
