package query

import (
	"bytes"
	"context"
	"errors"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestRunPageImage: a page asked with view "image" is the page rendered
// as an image fitted to the client's view (its longest side and encoded
// size), so a vision model can read a scan or a chart; the text says
// which page of how many it is. The rendering's memory is reserved from
// the process's budget, and a request the view cannot go with is refused.
func TestRunPageImage(t *testing.T) {
	st := memstore.New(memstore.Config{})
	// rendering is slow under the race detector: the deadline is not
	// this test's subject
	ctx := context.Background()
	b := Budget{Timeout: 2 * time.Minute}
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("..", "inspect", "testdata", "pdf", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	scan := put(t, st, "application/pdf", read("scan.pdf"))
	doc := put(t, st, "application/pdf", read("chromium.pdf"))

	mem := membudget.New(1 << 30)
	b.Memory = mem
	a, err := Run(ctx, st, doc, Request{Page: 2, View: ViewImage}, b)
	if err != nil || a.Image == nil {
		t.Fatalf("page image: %+v %v", a, err)
	}
	img, format, err := image.Decode(bytes.NewReader(a.Image.Data))
	if err != nil || "image/"+format != a.Image.MIMEType || img.Bounds().Dx() != a.Image.Width || img.Bounds().Dy() != a.Image.Height {
		t.Fatalf("the image does not decode as described: %s %v %v", a.Image.MIMEType, img, err)
	}
	if a.Image.Height != imageview.DefaultMaxSide || !strings.HasPrefix(a.Text, "Page 2 of 3 of the PDF "+doc.ID+", as a 1212x1568 PNG (") || a.Cut != "page 2 of 3 shown; ask for page 3" || a.Total != 3 {
		t.Errorf("page image: %q %q %d, %dx%d", a.Text, a.Cut, a.Total, a.Image.Width, a.Image.Height)
	}
	if bitmap := int64(4 * 1212 * 1568); mem.Peak() < bitmap || mem.InUse() != 0 {
		t.Errorf("reserved %d bytes at the peak, %d held after, want at least the page's bitmap (%d), none after", mem.Peak(), mem.InUse(), bitmap)
	}

	// The client's view: a smaller side and a byte cap.
	b.ImageView = imageview.Limits{MaxSide: 400, MaxBytes: 60 << 10}
	a, err = Run(ctx, st, scan, Request{Page: 1, View: ViewImage}, b)
	if err != nil || max(a.Image.Width, a.Image.Height) > 400 || len(a.Image.Data) > 60<<10 {
		t.Fatalf("fitted: %dx%d, %d bytes, %v", a.Image.Width, a.Image.Height, len(a.Image.Data), err)
	}

	// Reserved from the process's budget: a budget too small for the
	// rendering waits, then says so.
	tight := b
	tight.Memory, tight.Timeout = membudget.New(1<<20), 200*time.Millisecond
	if _, err := Run(ctx, st, scan, Request{Page: 1, View: ViewImage}, tight); !errors.Is(err, ErrBudget) {
		t.Errorf("over the process's budget: %v", err)
	}
	small := b
	small.MaxMemory = 4 << 20
	if _, err := Run(ctx, st, scan, Request{Page: 1, View: ViewImage}, small); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "rendering page 1 at 400 px takes") {
		t.Errorf("over the query's memory: %v", err)
	}

	text := put(t, st, "text/plain", []byte("hello"))
	for _, tc := range []struct {
		name string
		req  Request
		want error
		msg  string
	}{
		{name: "past the end", req: Request{Page: 4, View: ViewImage}, want: ErrOutOfRange, msg: "page 4: " + doc.ID + " has 3 pages"},
		{name: "view without page", req: Request{Lines: &Range{From: 1}, View: ViewImage}, want: ErrBadRequest, msg: "view goes with page"},
		{name: "unknown view", req: Request{Page: 1, View: "pixels"}, want: ErrBadRequest, msg: `view "pixels": want "text" or "image"`},
	} {
		if _, err := Run(ctx, st, doc, tc.req, b); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v with %q", tc.name, err, tc.want, tc.msg)
		}
	}
	if _, err := Run(ctx, st, text, Request{Page: 1, View: ViewImage}, b); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "is not a PDF") {
		t.Errorf("a page image of text: %v", err)
	}
}
