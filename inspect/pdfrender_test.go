package inspect

import (
	"bytes"
	"context"
	"errors"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"regexp"
	"testing"
	"time"
)

// dark is the share of img's pixels that are far from white: ink.
func dark(img image.Image) float64 {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r+g+bl < 3*0x8000 {
				n++
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy())
}

// TestRenderPDFPage: a page renders at the longest side asked for, as PNG
// while it fits the byte cap, as JPEG or smaller when it does not; the
// scan's page shows its ink; a page the document lacks, bad options and a
// cap nothing fits are errors that say so.
func TestRenderPDFPage(t *testing.T) {
	chromium, scan := corpusFile(t, "chromium.pdf"), corpusFile(t, "scan.pdf")
	// Encoding is slow under the race detector: the deadline is not
	// this test's subject.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	render := func(data []byte, page int, o RenderOptions) (RenderedPage, image.Image, error) {
		t.Helper()
		p, err := RenderPDFPage(ctx, bytes.NewReader(data), int64(len(data)), page, o)
		if err != nil {
			return p, nil, err
		}
		img, format, err := image.Decode(bytes.NewReader(p.Data))
		if err != nil || "image/"+format != p.MIME || img.Bounds().Dx() != p.Width || img.Bounds().Dy() != p.Height {
			t.Fatalf("page %d: %s %dx%d decodes as %s %v, %v", page, p.MIME, p.Width, p.Height, format, img.Bounds(), err)
		}
		return p, img, nil
	}

	// A US Letter page (612x792 pt) at the default 1568 px.
	p, img, err := render(chromium, 1, RenderOptions{})
	if err != nil || p.MIME != "image/png" || p.Width != 1212 || p.Height != 1568 || p.Pages != 3 || int64(len(p.Data)) > DefaultRenderMaxBytes {
		t.Fatalf("default: %s %dx%d, %d bytes, %d pages, %v", p.MIME, p.Width, p.Height, len(p.Data), p.Pages, err)
	}
	if d := dark(img); d < 0.005 || d > 0.2 {
		t.Errorf("default: %.4f of the pixels are ink, want text on white", d)
	}
	png := len(p.Data)

	// A cap under the PNG: JPEG, then smaller.
	p, _, err = render(chromium, 1, RenderOptions{MaxBytes: int64(png / 2)})
	if err != nil || p.MIME != "image/jpeg" || len(p.Data) > png/2 || p.Height > 1568 {
		t.Errorf("half the PNG's bytes: %s %dx%d, %d bytes, %v", p.MIME, p.Width, p.Height, len(p.Data), err)
	}
	p, _, err = render(chromium, 2, RenderOptions{MaxSide: 400})
	if err != nil || p.Width != 310 || p.Height != 400 {
		t.Errorf("400 px: %dx%d, %v", p.Width, p.Height, err)
	}

	// The scanned page: no text, but ink.
	_, img, err = render(scan, 2, RenderOptions{MaxSide: 800})
	if err != nil {
		t.Fatal(err)
	}
	if d := dark(img); d < 0.002 {
		t.Errorf("scan: %.4f of the pixels are ink", d)
	}

	if _, err := RenderPDFPage(ctx, bytes.NewReader(chromium), int64(len(chromium)), 4, RenderOptions{}); !errors.Is(err, ErrNoPage) || err.Error() != "inspect: no such page: page 4 of 3" {
		t.Errorf("page 4: %v", err)
	}
	if _, err := RenderPDFPage(ctx, bytes.NewReader(chromium), int64(len(chromium)), 1, RenderOptions{MaxBytes: -1}); err == nil || err.Error() != "inspect: render max_bytes -1 must not be negative" {
		t.Errorf("negative max_bytes: %v", err)
	}
	// Nothing fits 500 bytes: one size and one shrink are tried, not a
	// quarter at a time down to the smallest.
	_, err = RenderPDFPage(ctx, bytes.NewReader(scan), int64(len(scan)), 2, RenderOptions{MaxBytes: 500})
	if !errors.Is(err, ErrRenderTooLarge) || !regexp.MustCompile(`^inspect: the rendered page does not fit the byte cap: page 2 takes \d+ bytes at 1568 px \(JPEG, quality 40\), over 500, and under 200 px it could not be read; ask for a larger cap$`).MatchString(err.Error()) {
		t.Errorf("500 bytes: %v", err)
	}
}
