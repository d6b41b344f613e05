// Package imageview makes the copy of an image that a client which takes
// images is sent: the original, or a region of it, fitted to the
// client's view (at most Limits.MaxSide pixels on its longest side and
// Limits.MaxBytes encoded), PNG when it fits, else JPEG at falling
// quality, else smaller. The engine sends one in place of an image it
// stores; artifacts_query's region mode (package query) sends one of part
// of a stored image, so both fit an image to a client the same way.
//
// What making a view holds is read from the image's header before any
// pixel is decoded (Plan.Need): the caller reserves it from the process's
// memory budget first. Every refusal is a *Refusal, a sentence for the
// model that says which limit an image is over.
package imageview

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders a view reads
	"image/jpeg"
	"image/png"
	"io"
	"runtime"
	"strings"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	"github.com/mcpx-dev/mcpx/internal/humanize"
)

// Limits bound a view of an image. The engine takes them per client
// (engine.View.ImageView, a profile's image_view); zero fields take the
// defaults.
type Limits struct {
	// MaxSide is the longest side in pixels. Defaults to DefaultMaxSide
	// (1568), the size past which vision models (Claude) scale an image
	// down themselves.
	MaxSide int `json:"max_side,omitempty"`
	// MaxBytes is the most the encoded copy may take, decoded; a PNG over
	// it is encoded as JPEG at falling quality, then at a smaller size.
	// Defaults to DefaultMaxBytes (1 MiB).
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxSourcePixels refuses to decode a larger original (checked from
	// its header before any pixel is decoded); such an image is
	// referenced only. Defaults to DefaultMaxSourcePixels (50,000,000:
	// 50 MP, 200 MB of RGBA).
	MaxSourcePixels int64 `json:"max_source_pixels,omitempty"`
	// MaxSourceBytes refuses to read a larger original. Defaults to
	// DefaultMaxSourceBytes (64 MiB).
	MaxSourceBytes int64 `json:"max_source_bytes,omitempty"`
	// MaxWaitMS is how long, in milliseconds, a copy waits for the
	// process's work memory (serve.limits.max_work_bytes) to hold its
	// decode while other work holds it; past it, or past the call's
	// deadline, the image is referenced only, with a sentence saying
	// why. Defaults to DefaultMaxWaitMS (5 s).
	MaxWaitMS int64 `json:"max_wait_ms,omitempty"`
}

// The defaults of Limits.
const (
	DefaultMaxSide         = 1568
	DefaultMaxBytes        = 1 << 20
	DefaultMaxSourcePixels = 50_000_000
	DefaultMaxSourceBytes  = 64 << 20
	// DefaultMaxWaitMS: a view is worth a short wait, not a stalled
	// call; decoding a 50 MP original takes about 2 s.
	DefaultMaxWaitMS = 5000
)

// Validate refuses negative bounds (zero takes the default).
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"max_side", int64(l.MaxSide)}, {"max_bytes", l.MaxBytes}, {"max_source_pixels", l.MaxSourcePixels}, {"max_source_bytes", l.MaxSourceBytes}, {"max_wait_ms", l.MaxWaitMS}} {
		if f.v < 0 {
			return fmt.Errorf("image_view.%s must not be negative", f.name)
		}
	}
	return nil
}

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxSide <= 0 {
		l.MaxSide = DefaultMaxSide
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxSourcePixels <= 0 {
		l.MaxSourcePixels = DefaultMaxSourcePixels
	}
	if l.MaxSourceBytes <= 0 {
		l.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if l.MaxWaitMS <= 0 {
		l.MaxWaitMS = DefaultMaxWaitMS
	}
	return l
}

// Sentinel errors a *Refusal unwraps to.
var (
	// ErrTooLarge: the original is over Limits.MaxSourceBytes or
	// MaxSourcePixels, or no copy of it fits Limits.MaxBytes. A region of
	// it may still be had.
	ErrTooLarge = errors.New("imageview: image too large for a view")
	// ErrUndecodable: the bytes are not an image a decoder here reads.
	ErrUndecodable = errors.New("imageview: not a decodable image")
	// ErrOutside: the region asked for lies outside the image.
	ErrOutside = errors.New("imageview: region outside the image")
)

// Refusal is why no view was made, as a sentence for the model ("this
// 1280x46261 PNG has 59,214,080 pixels, more than the 50,000,000 an image
// view decodes (image_view.max_source_pixels)"). It unwraps to
// ErrTooLarge, ErrUndecodable or ErrOutside.
type Refusal struct {
	Reason string
	Err    error
	// Width and Height are the original's, from its header; zero when
	// the header did not say.
	Width, Height int
}

func (r *Refusal) Error() string { return r.Reason }
func (r *Refusal) Unwrap() error { return r.Err }

// Source is an image's encoded bytes.
type Source struct {
	// Open reads them from the start; a reader's error fails the view.
	Open func() io.Reader
	// Size is their length.
	Size int64
}

// Image is a view ready for an MCP image content block.
type Image struct {
	Data     []byte // encoded
	MIMEType string // image/png or image/jpeg, or the original's when it went as it is
	// Width and Height are the copy's.
	Width, Height int
	// Region is the part of the original the copy shows, in its pixels.
	Region image.Rectangle
	// OrigWidth, OrigHeight and OrigFormat ("png") are the original's.
	OrigWidth, OrigHeight int
	OrigFormat            string
}

// Plan is what an image's header says about its view: what making it
// holds, before any pixel is decoded.
type Plan struct {
	src    Source
	lim    Limits
	cfg    image.Config
	format string
	region image.Rectangle
	// asIs: the image fits as it is, and the original goes.
	asIs bool
	need int64
	what string
}

// Need is the most memory Make holds.
func (p *Plan) Need() int64 { return p.need }

// What is the image as the model reads it: "7000x7000 16-bit PNG".
func (p *Plan) What() string { return p.what }

// NewPlan reads the header of src and plans its view under l (zero fields
// take the defaults): of the whole image when region is empty, else of
// region (in the original's pixels, clipped to it). An image over
// l.MaxSourceBytes or l.MaxSourcePixels is refused. No pixel is decoded.
func NewPlan(src Source, l Limits, region image.Rectangle) (*Plan, error) {
	l = l.WithDefaults()
	p := &Plan{src: src, lim: l}
	var err error
	p.cfg, p.format, err = image.DecodeConfig(src.Open())
	if errors.Is(err, image.ErrFormat) {
		return nil, &Refusal{Reason: "it is not a PNG, JPEG, GIF or WebP image, the formats an image view decodes", Err: ErrUndecodable}
	}
	if err != nil {
		return nil, &Refusal{Reason: fmt.Sprintf("its bytes do not decode as an image (%v)", err), Err: ErrUndecodable}
	}
	w, h := p.cfg.Width, p.cfg.Height
	name := fmt.Sprintf("%dx%d %s", w, h, strings.ToUpper(p.format))
	too := func(reason string) error { return &Refusal{Reason: reason, Err: ErrTooLarge, Width: w, Height: h} }
	switch {
	case w <= 0 || h <= 0:
		return nil, &Refusal{Reason: fmt.Sprintf("its header declares a %dx%d image", w, h), Err: ErrUndecodable}
	case src.Size > l.MaxSourceBytes:
		return nil, too(fmt.Sprintf("this %s takes %s, more than the %s an image view reads (image_view.max_source_bytes)", name, humanize.Bytes(src.Size), humanize.Bytes(l.MaxSourceBytes)))
	case int64(w)*int64(h) > l.MaxSourcePixels:
		return nil, too(fmt.Sprintf("this %s has %s pixels, more than the %s an image view decodes (image_view.max_source_pixels)", name, humanize.Count(int64(w)*int64(h)), humanize.Count(l.MaxSourcePixels)))
	}
	whole := image.Rect(0, 0, w, h)
	p.region = whole
	if !region.Empty() {
		p.region = region.Intersect(whole)
		if p.region.Empty() {
			return nil, &Refusal{Reason: fmt.Sprintf("the region %d, %d, %d, %d (x, y, width, height) lies outside this %dx%d image", region.Min.X, region.Min.Y, region.Dx(), region.Dy(), w, h), Err: ErrOutside, Width: w, Height: h}
		}
	}
	if p.region == whole && w <= l.MaxSide && h <= l.MaxSide && src.Size <= l.MaxBytes {
		p.asIs, p.need, p.what = true, src.Size+readerSlack, name
		return p, nil
	}
	dec, err := decodeCost(p.cfg, p.format, src.Open, src.Size)
	if err != nil {
		return nil, &Refusal{Reason: fmt.Sprintf("this %s does not decode (%v)", name, err), Err: ErrUndecodable, Width: w, Height: h}
	}
	rw, rh := p.region.Dx(), p.region.Dy()
	dw, dh := FitSize(rw, rh, l.MaxSide)
	fit := scaleCost(dw, dh, rh) + l.MaxBytes + encoderSlack
	p.what = dec.what
	if p.region == whole {
		p.need = dec.bytes + fit
		return p, nil
	}
	// A region is copied out of the decoded image, which is then let go
	// before the copy is fitted: the decode and the fitting are not held
	// at once (a screen of a 59 MP page holds 246 MB, not 275).
	crop := cropCost(rw, rh)
	p.need = max(dec.bytes+crop, crop+fit)
	return p, nil
}

// jpegQualities are tried in order when a PNG copy is over MaxBytes.
var jpegQualities = []int{85, 70, 55, 40}

// collectOver is the need past which Make collects garbage before it
// decodes: a collection costs milliseconds, a decode of that size a few
// hundred.
const collectOver = 64 << 20

// Make decodes the image and returns its view: a copy whose longest side
// is at most Limits.MaxSide and whose encoding is at most
// Limits.MaxBytes, PNG when it fits, else JPEG at falling quality, else
// smaller; or the original's bytes when it fits as it is. It holds at
// most Need bytes, which the caller has reserved.
func (p *Plan) Make() (*Image, error) {
	if p.need >= collectOver {
		// The bytes just reserved were most likely held by work that
		// ended a moment ago, and are garbage the collector has not
		// taken: its pacer lets the heap grow to twice what was live at
		// its last cycle first. Collecting now lets the decode reuse
		// them, so the process stays within its budget.
		runtime.GC()
	}
	out := &Image{Region: p.region, OrigWidth: p.cfg.Width, OrigHeight: p.cfg.Height, OrigFormat: p.format}
	if p.asIs {
		data := make([]byte, p.need-readerSlack) // at least the decoded length
		n, err := io.ReadFull(p.src.Open(), data)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("reading the image: %w", err)
		}
		out.Data, out.MIMEType, out.Width, out.Height = data[:n], "image/"+p.format, p.cfg.Width, p.cfg.Height
		return out, nil
	}
	src, _, err := image.Decode(p.src.Open())
	if err != nil {
		return nil, &Refusal{Reason: fmt.Sprintf("this %s does not decode (%v)", p.what, err), Err: ErrUndecodable, Width: p.cfg.Width, Height: p.cfg.Height}
	}
	rw, rh := p.region.Dx(), p.region.Dy()
	if p.region != image.Rect(0, 0, p.cfg.Width, p.cfg.Height) {
		crop := image.NewRGBA(image.Rect(0, 0, rw, rh))
		xdraw.Draw(crop, crop.Bounds(), src, p.region.Min.Add(src.Bounds().Min), xdraw.Src)
		src = crop
		if p.need >= collectOver {
			runtime.GC() // the decoded image is garbage now: let the fitting reuse it
		}
	}
	buf := bytes.NewBuffer(make([]byte, 0, p.lim.MaxBytes))
	side := p.lim.MaxSide
	for range 8 {
		w, h := FitSize(rw, rh, side)
		img := src
		if w != rw || h != rh {
			img = scale(src, w, h)
		}
		out.Width, out.Height = w, h
		buf.Reset()
		err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&capWriter{buf, p.lim.MaxBytes}, img)
		if err == nil {
			out.Data, out.MIMEType = buf.Bytes(), "image/png"
			return out, nil
		}
		if !errors.Is(err, errOverCap) {
			return nil, fmt.Errorf("encoding PNG: %w", err)
		}
		for _, q := range jpegQualities {
			buf.Reset()
			err := jpeg.Encode(&capWriter{buf, p.lim.MaxBytes}, img, &jpeg.Options{Quality: q})
			if err == nil {
				out.Data, out.MIMEType = buf.Bytes(), "image/jpeg"
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
	return nil, &Refusal{Reason: fmt.Sprintf("no copy of this %s fits the %s an image view may take (image_view.max_bytes)", p.what, humanize.Bytes(p.lim.MaxBytes)),
		Err: ErrTooLarge, Width: p.cfg.Width, Height: p.cfg.Height}
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

// FitSize is the size of a w×h image scaled so that its longest side is
// at most side (never up).
func FitSize(w, h, side int) (int, int) {
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
