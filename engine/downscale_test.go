package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"testing"
)

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

func TestDownscale(t *testing.T) {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	t.Run("a 30000x30000 header is refused before decoding", func(t *testing.T) {
		_, err := downscale(context.Background(), nil, []byte(b64(pngHeaderOnly(30000, 30000))), ImageView{})
		if !errors.Is(err, ErrImageTooLarge) {
			t.Fatalf("got %v, want ErrImageTooLarge", err)
		}
	})
	t.Run("an image that fits goes as it is", func(t *testing.T) {
		small := noisyPNG(t, 40, 30)
		v, err := downscale(context.Background(), nil, []byte("data:image/png;base64,"+b64(small)), ImageView{})
		if err != nil || !bytes.Equal(v.data, small) || v.w != 40 || v.mime != "image/png" {
			t.Fatalf("got %+v, %v", v, err)
		}
	})
	t.Run("a noisy image too big as PNG becomes JPEG under the byte cap", func(t *testing.T) {
		v, err := downscale(context.Background(), nil, []byte(b64(noisyPNG(t, 1200, 800))), ImageView{MaxSide: 600, MaxBytes: 200 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if v.mime != "image/jpeg" || len(v.data) > 200<<10 || v.w > 600 || v.origW != 1200 {
			t.Fatalf("%s %dx%d %d bytes (from %dx%d)", v.mime, v.w, v.h, len(v.data), v.origW, v.origH)
		}
		img, _, err := image.Decode(bytes.NewReader(v.data))
		if err != nil || img.Bounds().Dx() != v.w || img.Bounds().Dy() != v.h {
			t.Fatalf("the copy does not decode to %dx%d: %v", v.w, v.h, err)
		}
	})
	t.Run("undecodable bytes are an error", func(t *testing.T) {
		if _, err := downscale(context.Background(), nil, []byte(b64([]byte("not an image at all"))), ImageView{}); err == nil {
			t.Fatal("no error")
		}
	})
}

func BenchmarkDownscaleScreenshot(b *testing.B) {
	img := image.NewNRGBA(image.Rect(0, 0, 2560, 1600))
	for y := range 1600 {
		for x := range 2560 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	s := base64.StdEncoding.EncodeToString(buf.Bytes())
	for b.Loop() {
		if _, err := downscale(context.Background(), nil, []byte(s), ImageView{}); err != nil {
			b.Fatal(err)
		}
	}
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
