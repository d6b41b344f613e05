package engine

// The downscaled copy of an image that a client which takes images (View.Images)
// gets in place of an image moved to the store: small enough for the
// model's context, large enough to read a screenshot. Decoding it draws
// on the process's memory budget (Options.Memory): what the decode holds
// is read from the header first (imagecost.go) and reserved before any
// pixel is decoded.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders the downscaler reads
	"image/jpeg"
	"image/png"
	"io"
	"runtime"
	"strings"
	"time"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/membudget"
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

// collectOver is the reservation past which a view collects garbage
// before it decodes (see downscale): a collection costs milliseconds, a
// decode of that size a few hundred.
const collectOver = 64 << 20

// viewPlan is what an image's header says about its view.
type viewPlan struct {
	cfg    image.Config
	format string
	open   func() io.Reader // the image's bytes, from the start
	// asIs: the image fits as it is, and the original goes.
	asIs bool
	need int64  // the bytes making the view holds
	what string // the image as the model reads it: "7000x7000 16-bit PNG"
}

// planView reads the header of the base64 image raw (a JSON string's body
// as it sits in the result: standard or URL-safe, padded or not, escaped
// or not, or a data: URI) and says what its view under v (defaults
// filled in) holds: the decode, the scaling and the encoding; or the
// original's bytes when it fits as it is. An image over v.MaxSourceBytes
// or v.MaxSourcePixels is refused. No pixel is decoded.
func planView(raw []byte, v ImageView) (viewPlan, error) {
	p := viewPlan{open: func() io.Reader {
		r, err := b64.NewReader(raw)
		if err != nil {
			return errReader{err}
		}
		return r
	}}
	encoded := int64(len(raw)) * 3 / 4
	if encoded > v.MaxSourceBytes {
		return p, fmt.Errorf("%w: over %d bytes", ErrImageTooLarge, v.MaxSourceBytes)
	}
	var err error
	p.cfg, p.format, err = image.DecodeConfig(p.open())
	if err != nil {
		return p, fmt.Errorf("reading the image header: %w", err)
	}
	w, h := p.cfg.Width, p.cfg.Height
	if w <= 0 || h <= 0 || int64(w)*int64(h) > v.MaxSourcePixels {
		return p, fmt.Errorf("%w: %dx%d is over %d pixels", ErrImageTooLarge, w, h, v.MaxSourcePixels)
	}
	if w <= v.MaxSide && h <= v.MaxSide && encoded <= v.MaxBytes {
		p.asIs, p.need, p.what = true, encoded+readerSlack, fmt.Sprintf("%dx%d %s", w, h, strings.ToUpper(p.format))
		return p, nil
	}
	dec, err := decodeCost(p.cfg, p.format, p.open, encoded)
	if err != nil {
		return p, err
	}
	dw, dh := fitSize(w, h, v.MaxSide)
	p.need, p.what = dec.bytes+scaleCost(dw, dh, h)+v.MaxBytes+encoderSlack, dec.what
	return p, nil
}

// downscale returns a view of the base64 image raw (see planView): a copy
// whose longest side is at most v.MaxSide and whose encoding is at most
// v.MaxBytes, PNG when it fits, else JPEG at falling quality, else
// smaller. What the view holds is reserved from mem first, waiting at
// most v.MaxWaitMS (and never past ctx) while other work holds it; a
// *memoryRefusal says why when it cannot be had.
func downscale(ctx context.Context, mem *membudget.Budget, raw []byte, v ImageView) (*viewImage, error) {
	v = imageViewDefaults(v)
	p, err := planView(raw, v)
	if err != nil {
		return nil, err
	}
	release, err := reserveView(ctx, mem, p.need, time.Duration(v.MaxWaitMS)*time.Millisecond, p.what)
	if err != nil {
		return nil, err
	}
	defer release()
	if p.need >= collectOver {
		// The bytes just reserved were most likely held by work that
		// ended a moment ago, and are garbage the collector has not
		// taken: its pacer lets the heap grow to twice what was live at
		// its last cycle first. Collecting now lets the decode reuse
		// them, so the process stays within its budget.
		runtime.GC()
	}
	out := &viewImage{origW: p.cfg.Width, origH: p.cfg.Height, origFormat: p.format}
	if p.asIs {
		data := make([]byte, p.need-readerSlack) // at least the decoded length
		n, err := io.ReadFull(p.open(), data)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("decoding base64: %w", err)
		}
		out.data, out.mime, out.w, out.h = data[:n], "image/"+p.format, p.cfg.Width, p.cfg.Height
		return out, nil
	}
	src, _, err := image.Decode(p.open())
	if err != nil {
		return nil, fmt.Errorf("decoding the %s image: %w", p.format, err)
	}
	buf := bytes.NewBuffer(make([]byte, 0, v.MaxBytes))
	side := v.MaxSide
	for range 8 {
		w, h := fitSize(p.cfg.Width, p.cfg.Height, side)
		var img image.Image = src
		if w != p.cfg.Width || h != p.cfg.Height {
			img = scale(src, w, h)
		}
		out.w, out.h = w, h
		buf.Reset()
		err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&capWriter{buf, v.MaxBytes}, img)
		if err == nil {
			out.data, out.mime = buf.Bytes(), "image/png"
			return out, nil
		}
		if !errors.Is(err, errOverCap) {
			return nil, fmt.Errorf("encoding PNG: %w", err)
		}
		for _, q := range jpegQualities {
			buf.Reset()
			err := jpeg.Encode(&capWriter{buf, v.MaxBytes}, img, &jpeg.Options{Quality: q})
			if err == nil {
				out.data, out.mime = buf.Bytes(), "image/jpeg"
				return out, nil
			}
			if !errors.Is(err, errOverCap) {
				return nil, fmt.Errorf("encoding JPEG: %w", err)
			}
		}
		side = side * 3 / 4
		if side < 64 {
			break
		}
	}
	return nil, fmt.Errorf("%w: no copy fits %d bytes", ErrImageTooLarge, v.MaxBytes)
}

// memoryRefusal is why a view was not made: the process's memory budget
// could not hold its decode. Its text is for the model; it unwraps to
// membudget.ErrTooLarge or membudget.ErrBusy.
type memoryRefusal struct {
	msg string
	err error
}

func (e *memoryRefusal) Error() string { return e.msg }
func (e *memoryRefusal) Unwrap() error { return e.err }

// reserveView reserves need bytes of mem for the view of a "what" image,
// waiting at most wait (and never past ctx) while other work holds them.
func reserveView(ctx context.Context, mem *membudget.Budget, need int64, wait time.Duration, what string) (release func(), err error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	release, err = mem.Reserve(wctx, need, "decoding a "+what+" for an image view")
	if err == nil {
		return release, nil
	}
	msg := fmt.Sprintf("decoding this %s takes %s", what, humanize.Bytes(need))
	switch {
	case errors.Is(err, membudget.ErrTooLarge):
		msg += fmt.Sprintf(", more than this server's whole work memory (%s, serve.limits.max_work_bytes)", humanize.Bytes(mem.Total()))
	case ctx.Err() != nil:
		msg += ", and the call ended while other work held this server's work memory (serve.limits.max_work_bytes)"
	default:
		msg += fmt.Sprintf(", and other work held all but %s of this server's %s of work memory (serve.limits.max_work_bytes) for the %s a view waits; call the tool again for an image view",
			humanize.Bytes(max(mem.Total()-mem.InUse(), 0)), humanize.Bytes(mem.Total()), wait)
	}
	return nil, &memoryRefusal{msg: msg, err: err}
}

// errOverCap: an encoding grew past the copy's byte cap.
var errOverCap = errors.New("over the byte cap")

// capWriter appends to buf until it would pass max bytes, then fails: an
// encoding that cannot fit stops there instead of growing its buffer.
type capWriter struct {
	buf *bytes.Buffer
	max int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	if int64(c.buf.Len()+len(p)) > c.max {
		return 0, errOverCap
	}
	return c.buf.Write(p)
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// fitSize is the size of a w×h image scaled so that its longest side is
// at most side (never up).
func fitSize(w, h, side int) (int, int) {
	if w <= side && h <= side {
		return w, h
	}
	if w >= h {
		return side, max(1, h*side/w)
	}
	return max(1, w*side/h), side
}

// scaleBandBytes bounds the float64 buffer (32 bytes a pixel) that one
// call of x/image/draw's kernel scaler holds in scale's bands.
const scaleBandBytes = 4 << 20

// scale returns src scaled to w×h with Catmull-Rom, which keeps the text
// of a screenshot readable. draw.CatmullRom.Scale in one call holds a
// buffer of 32 bytes for each of w × the source's height pixels (351 MB
// for a 7000x7000 original scaled to 1568x1568); scale runs it in two
// passes instead, across into an intermediate of w × the source's height
// at 4 bytes a pixel (44 MB), then down, each a band at a time. A pass
// scales one axis and maps the other onto itself, which Catmull-Rom does
// exactly (its weight is 1 at 0 and 0 at ±1), so the bands meet without
// seams.
func scale(src image.Image, w, h int) *image.RGBA {
	sb := src.Bounds()
	sw, sh := sb.Dx(), sb.Dy()
	rows, cols := scaleBands(w, sh)
	mid := image.NewRGBA(image.Rect(0, 0, w, sh))
	inBands(sh, rows, func(n int) xdraw.Scaler { return xdraw.CatmullRom.NewScaler(w, n, sw, n) }, func(sc xdraw.Scaler, y, n int) {
		sc.Scale(mid, image.Rect(0, y, w, y+n), src, image.Rect(sb.Min.X, sb.Min.Y+y, sb.Max.X, sb.Min.Y+y+n), xdraw.Src, nil)
	})
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	inBands(w, cols, func(n int) xdraw.Scaler { return xdraw.CatmullRom.NewScaler(n, h, n, sh) }, func(sc xdraw.Scaler, x, n int) {
		sc.Scale(dst, image.Rect(x, 0, x+n, h), mid, image.Rect(x, 0, x+n, sh), xdraw.Src, nil)
	})
	return dst
}

// inBands cuts total into bands of band (the last one shorter) and calls
// run with each band's start and size and a scaler for that size, made by
// scaler once for the full bands and once for the last.
func inBands(total, band int, scaler func(n int) xdraw.Scaler, run func(sc xdraw.Scaler, off, n int)) {
	full := scaler(band)
	for off := 0; off < total; off += band {
		if n := total - off; n < band {
			run(scaler(n), off, n)
			return
		}
		run(full, off, band)
	}
}

// scaleBands are the rows of scale's first pass and the columns of its
// second that one band holds, for a copy w pixels wide of an image sh
// pixels high.
func scaleBands(w, sh int) (rows, cols int) {
	return min(sh, max(1, scaleBandBytes/(32*w))), min(w, max(1, scaleBandBytes/(32*sh)))
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
	if v.MaxWaitMS <= 0 {
		v.MaxWaitMS = layer.DefaultImageMaxWaitMS
	}
	return v
}
