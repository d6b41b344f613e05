package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// PDF summaries and page text come from PDFium (pdfium.go), laid out into
// words and lines here (pdflayout.go). Every document is read under a
// guardedReaderAt, so reads fail after the deadline or the byte cap, and
// under runGuarded, so a panic is recovered; the deadline also stops a
// PDFium call in flight, reading or not.

var (
	// ErrNotPDF is returned (wrapped) for bytes a PDF reader cannot open.
	ErrNotPDF = errors.New("inspect: not a readable PDF")
	// ErrNoPage is returned (wrapped) by PDFPageText and RenderPDFPage for
	// a page the document does not have.
	ErrNoPage = errors.New("inspect: no such page")
)

const (
	// summaryTextChars is how much of a document's text a Summary keeps.
	summaryTextChars = 300
	// infoChars caps the title and author a Summary keeps.
	infoChars = 200
	// pageTextTimeout bounds PDFPageText when its context has no deadline.
	pageTextTimeout = 2 * time.Second
)

type pdfResult struct {
	s     Summary
	parts []TextPart
}

// inspectPDF reads the page count, the Info title and author, and the text
// of the pages in order until the time, byte or text cap; pages without
// text are counted (scans). The reader's one-time start is waited for
// first, outside lim.Timeout.
func inspectPDF(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (Summary, []TextPart, error) {
	lim = limitsOrDefault(lim)
	if err := mayBePDF(r, size); err != nil {
		return Summary{}, nil, err
	}
	if _, err := pdfReader.ready(ctx); err != nil {
		return Summary{}, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	g := newGuardedReaderAt(ctx, r, lim.MaxBytes)
	// What the document says before its pages are read: kept when the
	// reader is left behind at the deadline (runGuarded), which a long
	// uninterruptible step (a copy of a large buffer in PDFium) can make
	// happen wherever the deadline falls.
	var first atomic.Pointer[Summary]
	res, err := runGuarded(ctx, func() (pdfResult, error) {
		d, err := openPDF(ctx, g, size)
		if err != nil {
			return pdfResult{}, err
		}
		defer d.close()
		n, err := d.pages()
		if err != nil {
			return pdfResult{}, err
		}
		s := Summary{Kind: "pdf", Format: "pdf", Pages: n,
			Title: cleanLine(d.meta("Title"), infoChars), Author: cleanLine(d.meta("Author"), infoChars)}
		known := s
		first.Store(&known)
		var parts []TextPart
		var kept int64
		var head strings.Builder
		for i := 1; i <= s.Pages; i++ {
			if why := g.exhausted(); why != "" {
				s.Partial = why
				break
			}
			if kept >= lim.MaxTextBytes {
				s.Partial = "text"
				break
			}
			text, err := d.pageText(i-1, int(lim.MaxTextBytes-kept))
			if err != nil {
				if why := g.exhausted(); why != "" {
					s.Partial = why
					break
				}
				continue // one bad page does not hide the others
			}
			text = strings.TrimSpace(text)
			if text == "" {
				s.NoTextPages++
				if len(s.NoText) < maxNames {
					s.NoText = append(s.NoText, i)
				}
				continue
			}
			kept += int64(len(text))
			parts = append(parts, TextPart{Place: fmt.Sprintf("page %d", i), Text: text})
			if head.Len() < 4*summaryTextChars {
				head.WriteString(text)
				head.WriteByte(' ')
			}
		}
		s.Text = cleanLine(head.String(), summaryTextChars)
		return pdfResult{s, parts}, nil
	})
	if err != nil {
		if known := first.Load(); known != nil {
			return *known, nil, err
		}
		return Summary{}, nil, err
	}
	return res.s, res.parts, nil
}

// PDFPageText returns the text of page (1-based) and the document's page
// count. It reads at most DefaultMaxBytes and stops at ctx's deadline, or
// after pageTextTimeout when ctx has none; the PDF reader's one-time start
// is waited for first. A page past the end returns ErrNoPage with the page
// count; a page without text (a scan) returns "".
func PDFPageText(ctx context.Context, r io.ReaderAt, size int64, page int) (string, int, error) {
	type result struct {
		text  string
		pages int
	}
	res, err := onPDFPage(ctx, r, size, page, pageTextTimeout, func(d *pdfDoc, g *guardedReaderAt, pages int) (result, error) {
		text, err := d.pageText(page-1, int(DefaultMaxTextBytes))
		if err != nil {
			if why := g.exhausted(); why != "" {
				return result{pages: pages}, fmt.Errorf("inspect: page %d: %s cap reached: %w", page, why, err)
			}
			return result{pages: pages}, fmt.Errorf("inspect: page %d: %w", page, err)
		}
		return result{strings.TrimSpace(text), pages}, nil
	})
	var np noPageError
	if errors.As(err, &np) {
		res.pages = np.pages
	}
	return res.text, res.pages, err
}

// noPageError is ErrNoPage with the document's page count.
type noPageError struct{ page, pages int }

func (e noPageError) Error() string {
	return fmt.Sprintf("%v: page %d of %d", ErrNoPage, e.page, e.pages)
}

func (e noPageError) Unwrap() error { return ErrNoPage }

// onPDFPage runs read on page (1-based) of the PDF in r's size bytes,
// with the document open and its page count, under runGuarded; the page
// must exist (a noPageError says how many there are). It waits for the
// reader's one-time start, then reads at most DefaultMaxBytes until ctx's
// deadline, or for timeout when ctx has none.
func onPDFPage[T any](ctx context.Context, r io.ReaderAt, size int64, page int, timeout time.Duration, read func(d *pdfDoc, g *guardedReaderAt, pages int) (T, error)) (T, error) {
	var zero T
	if err := mayBePDF(r, size); err != nil {
		return zero, err
	}
	if _, err := pdfReader.ready(ctx); err != nil {
		return zero, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	g := newGuardedReaderAt(ctx, r, DefaultMaxBytes)
	return runGuarded(ctx, func() (T, error) {
		d, err := openPDF(ctx, g, size)
		if err != nil {
			return zero, err
		}
		defer d.close()
		n, err := d.pages()
		if err != nil {
			return zero, err
		}
		if page < 1 || page > n {
			return zero, noPageError{page, n}
		}
		return read(d, g, n)
	})
}

// pdfProbe is how much of each end of a file mayBePDF looks at.
const pdfProbe = 64 << 10

// mayBePDF returns ErrNotPDF for bytes no PDF reader could open: no
// object ("obj", "endobj") near the start, and none, nor a trailer or
// cross-reference, near the end; nil where a reader may find a document.
// Every PDF has indirect objects, and a reader that rebuilds a broken file
// finds them from either end; a blob that merely starts with "%PDF-" (the
// magic bytes a detector goes by) has none, and would cost the reader's
// start, seconds and tens of megabytes once per process, for nothing.
func mayBePDF(r io.ReaderAt, size int64) error {
	if size <= 0 {
		return fmt.Errorf("%w: empty", ErrNotPDF)
	}
	head := make([]byte, min(size, pdfProbe))
	if n, err := r.ReadAt(head, 0); n < len(head) {
		return fmt.Errorf("%w: %w", ErrNotPDF, err)
	}
	if bytes.Contains(head, []byte("obj")) {
		return nil
	}
	tail := head
	if size > pdfProbe {
		tail = make([]byte, pdfProbe)
		if n, err := r.ReadAt(tail, size-pdfProbe); n < len(tail) {
			return fmt.Errorf("%w: %w", ErrNotPDF, err)
		}
	}
	for _, word := range []string{"obj", "trailer", "startxref", "xref"} {
		if bytes.Contains(tail, []byte(word)) {
			return nil
		}
	}
	return fmt.Errorf("%w: no object in its first and last %d kB", ErrNotPDF, pdfProbe>>10)
}

// cleanLine folds s onto one line of at most max bytes: whitespace runs
// become one space and other control characters go.
func cleanLine(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if b.Len() >= max+utf8.UTFMax {
			break
		}
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case r == utf8.RuneError || !unicode.IsPrint(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return truncateUTF8(b.String(), max)
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
