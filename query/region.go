package query

// The region mode: an image view of part of a stored image, for a client
// that takes images, made by package imageview as the engine makes the
// view of a whole image, so a screenshot too large to show whole (a
// 1280x46261 full page) can be looked at a screen at a time.

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"strings"

	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

// Region is a rectangle of a stored image, in its pixels from its top
// left corner. A Width or Height of 0 reaches the image's right or bottom
// edge; a rectangle past an edge is clipped to it.
type Region struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
}

// rect is r as an image.Rectangle, an open side reaching past any image.
func (r Region) rect() image.Rectangle {
	const edge = 1 << 30
	w, h := r.Width, r.Height
	if w == 0 {
		w = edge
	}
	if h == 0 {
		h = edge
	}
	return image.Rect(r.X, r.Y, r.X+min(w, edge), r.Y+min(h, edge))
}

// regionSourceLimits bound what a region's view reads in place of
// ImageView's MaxSourcePixels and MaxSourceBytes: the stored bytes are
// streamed, and the decode is bounded by the query's MaxMemory instead,
// so that an image too large for a whole view can still be looked at in
// parts.
const (
	regionSourcePixels = 1 << 40
	regionSourceBytes  = 1 << 62
)

// runRegion answers an image view of rg of the stored image ref, fitted
// to b.ImageView. What the decode holds is read from the image's header,
// refused past b.MaxMemory and reserved from b.Memory before any pixel is
// decoded.
func runRegion(ctx context.Context, st store.Store, ref store.Ref, rg Region, b Budget) (Answer, error) {
	if !strings.HasPrefix(ref.MIMEType, "image/") {
		return Answer{}, fmt.Errorf("%w: %s is not an image (%s); a region is of a stored image", ErrBadRequest, ref.ID, orUnknown(ref.MIMEType))
	}
	ra, closeFn, err := readerAt(ctx, st, ref)
	if err != nil {
		return Answer{}, err
	}
	defer closeFn()
	lim := b.ImageView
	lim.MaxSourcePixels, lim.MaxSourceBytes = regionSourcePixels, regionSourceBytes
	src := imageview.Source{Size: ref.SizeBytes, Open: func() io.Reader { return io.NewSectionReader(ra, 0, ref.SizeBytes) }}
	p, err := imageview.NewPlan(src, lim, rg.rect())
	switch {
	case errors.Is(err, imageview.ErrOutside):
		return Answer{}, fmt.Errorf("%w: %w", ErrOutOfRange, err)
	case err != nil:
		return Answer{}, fmt.Errorf("%w: %s: %w", ErrBadRequest, ref.ID, err)
	case p.Need() > b.MaxMemory:
		return Answer{}, fmt.Errorf("%w: decoding this %s for a region takes %s, more than the %s a query may hold (max_memory); a region is cut from the whole decoded image",
			ErrBudget, p.What(), humanize.Bytes(p.Need()), humanize.Bytes(b.MaxMemory))
	}
	release, err := b.reserve(ctx, p.Need(), "decoding a "+p.What()+" for a region view")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	img, err := p.Make()
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %s: %w", ErrBadRequest, ref.ID, err)
	}
	r := img.Region
	text := fmt.Sprintf("Region %d, %d, %d, %d (x, y, width and height in pixels) of the %dx%d image %s, as a %dx%d %s (%s)",
		r.Min.X, r.Min.Y, r.Dx(), r.Dy(), img.OrigWidth, img.OrigHeight, ref.ID, img.Width, img.Height,
		strings.ToUpper(strings.TrimPrefix(img.MIMEType, "image/")), humanize.Bytes(int64(len(img.Data))))
	if img.Width == r.Dx() && img.Height == r.Dy() {
		text += " at full size"
	} else {
		text += ", scaled down to fit the view; ask for a smaller region to see it at full size"
	}
	return Answer{Text: text, Image: img}, nil
}
