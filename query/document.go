package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"path"
	"strings"

	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/inspect"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

// isArchive reports whether mime names a container inspect.ArchiveEntry reads.
func isArchive(mime string) bool {
	switch mime {
	case "application/zip", "application/x-zip-compressed", "application/x-tar", "application/gzip", "application/x-gzip",
		"application/java-archive", "application/epub+zip":
		return true
	}
	return strings.HasPrefix(mime, "application/vnd.openxmlformats-officedocument.") ||
		strings.HasPrefix(mime, "application/vnd.oasis.opendocument.")
}

// runPage shows a PDF page's text.
func runPage(ctx context.Context, st store.Store, ref store.Ref, page int, b Budget) (Answer, error) {
	// the most of the PDF inspect reads, which its parser may hold
	release, err := b.reserve(ctx, inspect.DefaultMaxBytes, "a PDF page query")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	ra, closeFn, err := readerAt(ctx, st, ref)
	if err != nil {
		return Answer{}, err
	}
	defer closeFn()
	text, pages, err := inspect.PDFPageText(ctx, ra, ref.SizeBytes, page)
	switch {
	case errors.Is(err, inspect.ErrNoPage):
		return Answer{}, fmt.Errorf("%w: page %d: %s has %d pages", ErrOutOfRange, page, ref.ID, pages)
	case errors.Is(err, inspect.ErrNotPDF):
		return Answer{}, fmt.Errorf("%w: %s is not a PDF (%s); ask for lines, grep or bytes", ErrBadRequest, ref.ID, orUnknown(ref.MIMEType))
	case err != nil:
		return Answer{}, err
	}
	a := Answer{Text: text, Total: int64(pages)}
	if limit := b.textLimit(); len(text) > limit {
		a.Text = cutUTF8(text, limit)
		a.Cut = fmt.Sprintf("the first %s of %s characters of page %d shown; the rest is in the artifact's search index",
			humanize.Count(int64(len(a.Text))), humanize.Count(int64(len(text))), page)
	} else if page < pages {
		a.Cut = fmt.Sprintf("page %d of %d shown; ask for page %d", page, pages, page+1)
	}
	if text == "" {
		a.Text = ""
		a.Cut = strings.TrimSpace(fmt.Sprintf("page %d of %d has no text (scanned or drawn); %s", page, pages, nextPage(page, pages)))
	}
	return a, nil
}

// runPageImage renders a PDF page as an image fitted to b.ImageView (its
// longest side and encoded size): what the PDF reader may hold, the
// page's bitmap and its encodings are reserved from b.Memory first.
func runPageImage(ctx context.Context, st store.Store, ref store.Ref, page int, b Budget) (Answer, error) {
	o := inspect.RenderOptions{MaxSide: b.ImageView.MaxSide, MaxBytes: b.ImageView.MaxBytes}.WithDefaults()
	if err := o.Validate(); err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	side := int64(o.MaxSide)
	// the PDF reader's input, the page's RGBA bitmap and a copy of it, and
	// the encodings tried
	need := int64(inspect.DefaultMaxBytes) + 2*4*side*side + 2*o.MaxBytes
	if need > b.MaxMemory {
		return Answer{}, fmt.Errorf("%w: rendering page %d at %d px takes %s, more than the %s a query may hold (max_memory)",
			ErrBudget, page, side, humanize.Bytes(need), humanize.Bytes(b.MaxMemory))
	}
	release, err := b.reserve(ctx, need, "rendering a PDF page as an image")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	ra, closeFn, err := readerAt(ctx, st, ref)
	if err != nil {
		return Answer{}, err
	}
	defer closeFn()
	p, err := inspect.RenderPDFPage(ctx, ra, ref.SizeBytes, page, o)
	switch {
	case errors.Is(err, inspect.ErrNoPage):
		return Answer{}, fmt.Errorf("%w: page %d: %s has %d pages", ErrOutOfRange, page, ref.ID, p.Pages)
	case errors.Is(err, inspect.ErrNotPDF):
		return Answer{}, fmt.Errorf("%w: %s is not a PDF (%s); a page image is of a stored PDF", ErrBadRequest, ref.ID, orUnknown(ref.MIMEType))
	case errors.Is(err, inspect.ErrRenderTooLarge):
		return Answer{}, fmt.Errorf("%w: %w", ErrBudget, err)
	case err != nil:
		return Answer{}, err
	}
	text := fmt.Sprintf("Page %d of %d of the PDF %s, as a %dx%d %s (%s)", page, p.Pages, ref.ID, p.Width, p.Height,
		strings.ToUpper(strings.TrimPrefix(p.MIME, "image/")), humanize.Bytes(int64(len(p.Data))))
	img := &imageview.Image{Data: p.Data, MIMEType: p.MIME, Width: p.Width, Height: p.Height, Region: image.Rect(0, 0, p.Width, p.Height), OrigWidth: p.Width, OrigHeight: p.Height, OrigFormat: "pdf"}
	a := Answer{Text: text, Image: img, Total: int64(p.Pages)}
	if page < p.Pages {
		a.Cut = fmt.Sprintf("page %d of %d shown; ask for page %d", page, p.Pages, page+1)
	}
	return a, nil
}

func nextPage(page, pages int) string {
	if page < pages {
		return fmt.Sprintf("ask for page %d", page+1)
	}
	return ""
}

// runEntry shows an archive member: text inline, else (or when it is over
// the budget) stored as its own artifact and referenced.
func runEntry(ctx context.Context, st store.Store, ref store.Ref, name string, b Budget) (Answer, error) {
	// the entry, and what its decompressor reads at a time
	release, err := b.reserve(ctx, b.maxInput()+readBuffer, "an archive entry query")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	ra, closeFn, err := readerAt(ctx, st, ref)
	if err != nil {
		return Answer{}, err
	}
	defer closeFn()
	data, mime, err := inspect.ArchiveEntry(ctx, ra, ref.SizeBytes, ref.MIMEType, name, b.maxInput())
	switch {
	case errors.Is(err, inspect.ErrNoEntry):
		hint := ""
		if names, _ := inspect.ArchiveNames(ctx, ra, ref.SizeBytes, ref.MIMEType, 10); len(names) > 0 {
			hint = "; its first entries: " + cutString(strings.Join(names, ", "), 300)
		}
		return Answer{}, fmt.Errorf("%w: %s has no entry %q%s", ErrOutOfRange, ref.ID, name, hint)
	case errors.Is(err, inspect.ErrNotArchive):
		return Answer{}, fmt.Errorf("%w: %s is not an archive (%s); ask for lines, grep or bytes", ErrBadRequest, ref.ID, orUnknown(ref.MIMEType))
	case errors.Is(err, inspect.ErrEntryTooLarge):
		return Answer{}, fmt.Errorf("%w: entry %q holds more than %s bytes", ErrBudget, name, humanize.Count(b.maxInput()))
	case err != nil:
		return Answer{}, err
	}
	a := Answer{Total: int64(len(data))}
	text := looksText(data)
	limit := b.textLimit()
	if text && len(data) <= limit {
		a.Text = string(data)
		return a, nil
	}
	ns, _, _ := store.SplitID(ref.ID)
	src := ref.Source
	src.Path = strings.TrimPrefix(src.Path+"/"+name, "/")
	stored, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{
		Namespace: ns, MIMEType: mime, Filename: path.Base(name), Scope: ref.Scope, Source: src,
	})
	if err != nil {
		return Answer{}, fmt.Errorf("query: store entry %q: %w", name, err)
	}
	a.Stored = &stored
	if text {
		a.Text = string(cutUTF8(data, limit))
		a.Cut = fmt.Sprintf("the first %s of %s bytes of entry %q shown; the whole entry is stored as %s: ask it for lines or grep",
			humanize.Count(int64(len(a.Text))), humanize.Count(int64(len(data))), cutString(name, 60), stored.ID)
		return a, nil
	}
	a.Text = fmt.Sprintf("entry %q is %s (%s bytes), stored as artifact %s", name, mime, humanize.Count(int64(len(data))), stored.ID)
	return a, nil
}
