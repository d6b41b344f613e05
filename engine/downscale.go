package engine

// The downscaled copy of an image that a client which takes images
// (View.Images) gets in place of an image moved to the store, made by
// package imageview (which artifacts_query's region mode shares). Its
// decode draws on the process's memory budget (Options.Memory): what it
// holds is read from the header first and reserved before any pixel is
// decoded; what cannot be had in time is a sentence for the model.

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"time"

	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/membudget"
)

// downscale returns a view of the base64 image raw (a JSON string's body
// as it sits in the result: standard or URL-safe, padded or not, escaped
// or not, or a data: URI) under v: see imageview.Plan.Make. What the view
// holds is reserved from mem first, waiting at most v.MaxWaitMS (and
// never past ctx) while other work holds it; a *memoryRefusal says why
// when it cannot be had, an *imageview.Refusal why the image has no view.
func downscale(ctx context.Context, mem *membudget.Budget, raw []byte, v imageview.Limits) (*imageview.Image, error) {
	v = v.WithDefaults()
	p, err := imageview.NewPlan(base64Source(raw), v, image.Rectangle{})
	if err != nil {
		return nil, err
	}
	release, err := reserveView(ctx, mem, p.Need(), time.Duration(v.MaxWaitMS)*time.Millisecond, p.What())
	if err != nil {
		return nil, err
	}
	defer release()
	return p.Make()
}

// base64Source reads the base64 image raw decoded.
func base64Source(raw []byte) imageview.Source {
	return imageview.Source{Size: int64(len(raw)) * 3 / 4, Open: func() io.Reader {
		r, err := b64.NewReader(raw)
		if err != nil {
			return errReader{err}
		}
		return r
	}}
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

// noViewReason is the sentence a model reads for a view that err refused
// (a *memoryRefusal or an *imageview.Refusal say it in its terms): for an
// image only too large to show whole, with how to see part of it.
func (e *Engine) noViewReason(err error, v imageview.Limits) string {
	var r *imageview.Refusal
	if !errors.As(err, &r) || !errors.Is(err, imageview.ErrTooLarge) || r.Width <= 0 {
		return err.Error()
	}
	query, _ := e.tools.names()
	side := v.WithDefaults().MaxSide
	return fmt.Sprintf("%s; ask %s for a region of it to see part of it at full size (x, y, width and height in its pixels, e.g. 0, 0, %d, %d)",
		r.Reason, query, min(r.Width, side), min(r.Height, side))
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
