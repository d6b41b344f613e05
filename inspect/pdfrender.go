package inspect

// A PDF page as an image, for clients that take images: a scanned page
// has no text to read, and a chart says more drawn than as its labels.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"time"

	"github.com/klippa-app/go-pdfium/enums"
	"github.com/klippa-app/go-pdfium/requests"
)

// Defaults of RenderOptions.
const (
	// DefaultRenderMaxSide is the longest side of a rendered page in
	// pixels: the size past which vision models (Claude) scale an image
	// down themselves, as for the images a client is shown.
	DefaultRenderMaxSide = 1568
	// DefaultRenderMaxBytes caps a rendered page's encoding: 1 MiB, as the
	// images a client is shown.
	DefaultRenderMaxBytes = 1 << 20
	// DefaultRenderTimeout bounds RenderPDFPage when its context has no
	// deadline.
	DefaultRenderTimeout = 5 * time.Second
)

// minRenderSide is the smallest long side RenderPDFPage shrinks a page to
// before it gives up on the byte cap; lowestQuality the last JPEG quality
// it tries at each size.
const (
	minRenderSide = 200
	lowestQuality = 40
)

// ErrRenderTooLarge is returned (wrapped) when a page does not fit the
// byte cap even small and coarse.
var ErrRenderTooLarge = errors.New("inspect: the rendered page does not fit the byte cap")

// RenderOptions bound a rendered page. Zero fields take their defaults.
type RenderOptions struct {
	// MaxSide is the longest side in pixels; the page is scaled to it.
	// Default DefaultRenderMaxSide (1568).
	MaxSide int
	// MaxBytes caps the encoded image: a PNG over it is encoded as JPEG at
	// falling quality, then rendered smaller. Default
	// DefaultRenderMaxBytes (1 MiB).
	MaxBytes int64
}

// WithDefaults returns o with its zero fields set to their defaults.
func (o RenderOptions) WithDefaults() RenderOptions {
	if o.MaxSide == 0 {
		o.MaxSide = DefaultRenderMaxSide
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultRenderMaxBytes
	}
	return o
}

// Validate refuses negative bounds (zero takes the default).
func (o RenderOptions) Validate() error {
	if o.MaxSide < 0 {
		return fmt.Errorf("inspect: render max_side %d must not be negative", o.MaxSide)
	}
	if o.MaxBytes < 0 {
		return fmt.Errorf("inspect: render max_bytes %d must not be negative", o.MaxBytes)
	}
	return nil
}

// RenderedPage is a PDF page as an image.
type RenderedPage struct {
	Data   []byte // the encoded image
	MIME   string // image/png or image/jpeg
	Width  int
	Height int
	Pages  int // the document's page count
}

// RenderPDFPage renders page (1-based) of the PDF in r's size bytes as an
// image whose longest side is o.MaxSide and whose encoding is at most
// o.MaxBytes: a PNG when it fits, else a JPEG at falling quality, else the
// page rendered smaller. It reads at most DefaultMaxBytes and stops at
// ctx's deadline, or after DefaultRenderTimeout when ctx has none; the PDF
// reader's one-time start is waited for first. A page past the end
// returns ErrNoPage with the page count.
func RenderPDFPage(ctx context.Context, r io.ReaderAt, size int64, page int, o RenderOptions) (RenderedPage, error) {
	if err := o.Validate(); err != nil {
		return RenderedPage{}, err
	}
	o = o.WithDefaults()
	out, err := onPDFPage(ctx, r, size, page, DefaultRenderTimeout, func(d *pdfDoc, _ *guardedReaderAt, pages int) (RenderedPage, error) {
		for side := o.MaxSide; ; {
			out, smallest, err := d.render(page-1, side, o.MaxBytes)
			out.Pages = pages
			if err == nil || !errors.Is(err, ErrRenderTooLarge) {
				return out, err
			}
			// An encoding's size goes with the pixels: shrink by what
			// the smallest one is over, a little more, a quarter at least.
			next := min(side*3/4, int(float64(side)*0.9*math.Sqrt(float64(o.MaxBytes)/float64(smallest))))
			if next < minRenderSide {
				return out, fmt.Errorf("%w: page %d takes %d bytes at %d px (JPEG, quality %d), over %d, and under %d px it could not be read; ask for a larger cap",
					ErrRenderTooLarge, page, smallest, side, lowestQuality, o.MaxBytes, minRenderSide)
			}
			side = next
		}
	})
	var np noPageError
	if errors.As(err, &np) {
		out.Pages = np.pages
	}
	return out, err
}

// render draws page i (0-based) within side x side pixels and encodes it
// within maxBytes, ErrRenderTooLarge when no encoding fits, with the size
// of the smallest encoding tried.
func (d *pdfDoc) render(i, side int, maxBytes int64) (out RenderedPage, smallest int, err error) {
	page, err := d.inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: d.doc, Index: i})
	if err != nil {
		return out, 0, d.failed(fmt.Sprintf("page %d", i+1), err)
	}
	defer d.inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	res, err := d.inst.RenderPageInPixels(&requests.RenderPageInPixels{
		Page:        requests.Page{ByReference: &page.Page},
		Width:       side,
		Height:      side,
		RenderFlags: enums.FPDF_RENDER_FLAG_ANNOT,
	})
	if err != nil {
		return out, 0, d.failed(fmt.Sprintf("rendering page %d", i+1), err)
	}
	// The pixels live in the guest's memory until Cleanup.
	defer res.Cleanup()
	// RGBA, the format of a request that names none.
	img, _ := res.Result.RenderedImage.(*image.RGBA)
	if img == nil {
		return out, 0, fmt.Errorf("inspect: page %d rendered no image", i+1)
	}
	if res.Result.HasTransparency {
		img = onWhite(img)
	}
	out = RenderedPage{Width: res.Result.Width, Height: res.Result.Height}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return out, 0, fmt.Errorf("inspect: encoding page %d: %w", i+1, err)
	}
	if int64(b.Len()) <= maxBytes {
		out.Data, out.MIME = bytes.Clone(b.Bytes()), "image/png"
		return out, 0, nil
	}
	// JPEG qualities, tried in order, as for the images a client is shown.
	qualities := [...]int{85, 70, 55, lowestQuality}
	for _, q := range qualities {
		b.Reset()
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
			return out, 0, fmt.Errorf("inspect: encoding page %d: %w", i+1, err)
		}
		if int64(b.Len()) <= maxBytes {
			out.Data, out.MIME = bytes.Clone(b.Bytes()), "image/jpeg"
			return out, 0, nil
		}
	}
	return out, b.Len(), fmt.Errorf("%w of %d bytes", ErrRenderTooLarge, maxBytes)
}

// onWhite is img drawn on white paper: PDFium leaves a page with
// transparency on a transparent background, which a JPEG would turn black.
func onWhite(img *image.RGBA) *image.RGBA {
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(out, out.Bounds(), img, img.Bounds().Min, draw.Over)
	return out
}
