package engine

// The downscaled copy of an image that a client which takes images (View.Images)
// gets in place of an image moved to the store: small enough for the
// model's context, large enough to read a screenshot.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // decoders the downscaler reads
	"image/jpeg"
	"image/png"
	"io"
	"strings"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	"github.com/mcpx-dev/mcpx/engine/layer"
)

// viewImage is a downscaled image ready for a content block.
type viewImage struct {
	data       []byte // encoded
	mime       string
	w, h       int // of the copy
	origW      int
	origH      int
	origFormat string
}

// jpegQualities are tried in order when a PNG copy is over MaxBytes.
var jpegQualities = []int{85, 70, 55, 40}

// downscale decodes the base64 image b64 (a JSON string's unescaped text,
// standard or URL-safe, padded or not, or a data: URI) and returns a copy
// whose longest side is at most v.MaxSide and whose encoding is at most
// v.MaxBytes: PNG when it fits, else JPEG at falling quality, else smaller.
// The header is read first, and an image over v.MaxSourcePixels is refused
// before any pixel is decoded.
func downscale(b64 string, v ImageView) (*viewImage, error) {
	v = imageViewDefaults(v)
	if i := strings.IndexByte(b64, ','); strings.HasPrefix(b64, "data:") && i > 0 {
		b64 = b64[i+1:]
	}
	b64 = strings.TrimRight(b64, "=")
	if int64(len(b64))*3/4 > v.MaxSourceBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrImageTooLarge, v.MaxSourceBytes)
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(b64, "-_") {
		enc = base64.RawURLEncoding
	}
	open := func() io.Reader { return base64.NewDecoder(enc, strings.NewReader(b64)) }
	cfg, format, err := image.DecodeConfig(open())
	if err != nil {
		return nil, fmt.Errorf("reading the image header: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > v.MaxSourcePixels {
		return nil, fmt.Errorf("%w: %dx%d is over %d pixels", ErrImageTooLarge, cfg.Width, cfg.Height, v.MaxSourcePixels)
	}
	out := &viewImage{origW: cfg.Width, origH: cfg.Height, origFormat: format}
	if cfg.Width <= v.MaxSide && cfg.Height <= v.MaxSide && int64(len(b64))*3/4 <= v.MaxBytes {
		// It fits as it is: the original goes, not a re-encoding.
		data, err := io.ReadAll(open())
		if err != nil {
			return nil, fmt.Errorf("decoding base64: %w", err)
		}
		out.data, out.mime, out.w, out.h = data, "image/"+format, cfg.Width, cfg.Height
		return out, nil
	}
	src, _, err := image.Decode(open())
	if err != nil {
		return nil, fmt.Errorf("decoding the %s image: %w", format, err)
	}
	side := v.MaxSide
	for range 8 {
		img := fit(src, side)
		b := img.Bounds()
		out.w, out.h = b.Dx(), b.Dy()
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
			return nil, fmt.Errorf("encoding PNG: %w", err)
		}
		if int64(buf.Len()) <= v.MaxBytes {
			out.data, out.mime = buf.Bytes(), "image/png"
			return out, nil
		}
		for _, q := range jpegQualities {
			buf.Reset()
			if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
				return nil, fmt.Errorf("encoding JPEG: %w", err)
			}
			if int64(buf.Len()) <= v.MaxBytes {
				out.data, out.mime = buf.Bytes(), "image/jpeg"
				return out, nil
			}
		}
		side = side * 3 / 4
		if side < 64 {
			break
		}
	}
	return nil, fmt.Errorf("%w: no copy fits %d bytes", ErrImageTooLarge, v.MaxBytes)
}

// fit scales src so that its longest side is at most side (never up).
// Catmull-Rom keeps the text of a screenshot readable; it costs about
// 0.5 s for a 2560x1600 PNG on a loaded 2-core machine (ApproxBiLinear:
// 0.2 s, aliased text), paid only by clients that take images.
func fit(src image.Image, side int) image.Image {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= side && h <= side {
		return src
	}
	if w >= h {
		h, w = max(1, h*side/w), side
	} else {
		w, h = max(1, w*side/h), side
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	xdraw.CatmullRom.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	return dst
}

// imageViewDefaults fills the zero fields of v.
func imageViewDefaults(v ImageView) ImageView {
	if v.MaxSide <= 0 {
		v.MaxSide = layer.DefaultImageMaxSide
	}
	if v.MaxBytes <= 0 {
		v.MaxBytes = layer.DefaultImageMaxBytes
	}
	if v.MaxSourcePixels <= 0 {
		v.MaxSourcePixels = layer.DefaultImageMaxSourcePixels
	}
	if v.MaxSourceBytes <= 0 {
		v.MaxSourceBytes = layer.DefaultImageMaxSourceBytes
	}
	return v
}
