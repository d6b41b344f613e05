package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// PDF text comes from github.com/ledongthuc/pdf: pure Go, reads through an
// io.ReaderAt (so only the xref, the page tree and the content streams it
// needs are read), decodes font encodings and ToUnicode CMaps, and is kept
// up (it grew from rsc.io/pdf, which is frozen; pdfcpu validates and edits
// well but has no text extraction). It panics on some malformed input and
// cannot be interrupted, so every call runs under runGuarded with a
// guardedReaderAt: panics are recovered, and reads fail after the deadline
// or the byte cap.

var (
	// ErrNotPDF is returned (wrapped) for bytes a PDF reader cannot open.
	ErrNotPDF = errors.New("inspect: not a readable PDF")
	// ErrNoPage is returned (wrapped) by PDFPageText for a page the
	// document does not have.
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
// of the pages in order until the time, byte or text cap.
func inspectPDF(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (Summary, []TextPart, error) {
	lim = limitsOrDefault(lim)
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	g := newGuardedReaderAt(ctx, r, lim.MaxBytes)
	res, err := runGuarded(ctx, func() (pdfResult, error) {
		rd, err := pdf.NewReader(g, size)
		if err != nil {
			return pdfResult{}, fmt.Errorf("%w: %w", ErrNotPDF, err)
		}
		s := Summary{Kind: "pdf", Format: "pdf", Pages: rd.NumPage()}
		info := rd.Trailer().Key("Info")
		s.Title = cleanLine(info.Key("Title").Text(), infoChars)
		s.Author = cleanLine(info.Key("Author").Text(), infoChars)
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
			text, err := pageText(rd, i)
			if err != nil {
				if why := g.exhausted(); why != "" {
					s.Partial = why
					break
				}
				continue // one bad page does not hide the others
			}
			text = strings.TrimSpace(text)
			if text == "" {
				continue
			}
			if room := lim.MaxTextBytes - kept; int64(len(text)) > room {
				text = truncateUTF8(text, int(room))
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
		return Summary{}, nil, err
	}
	return res.s, res.parts, nil
}

// PDFPageText returns the text of page (1-based) and the document's page
// count. It reads at most DefaultMaxBytes and stops at ctx's deadline, or
// after pageTextTimeout when ctx has none. A page past the end returns
// ErrNoPage with the page count.
func PDFPageText(ctx context.Context, r io.ReaderAt, size int64, page int) (string, int, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pageTextTimeout)
		defer cancel()
	}
	g := newGuardedReaderAt(ctx, r, DefaultMaxBytes)
	type result struct {
		text  string
		pages int
	}
	res, err := runGuarded(ctx, func() (result, error) {
		rd, err := pdf.NewReader(g, size)
		if err != nil {
			return result{}, fmt.Errorf("%w: %w", ErrNotPDF, err)
		}
		n := rd.NumPage()
		if page < 1 || page > n {
			return result{pages: n}, fmt.Errorf("%w: page %d of %d", ErrNoPage, page, n)
		}
		text, err := pageText(rd, page)
		if err != nil {
			if why := g.exhausted(); why != "" {
				return result{pages: n}, fmt.Errorf("inspect: page %d: %s cap reached: %w", page, why, err)
			}
			return result{pages: n}, fmt.Errorf("inspect: page %d: %w", page, err)
		}
		return result{strings.TrimSpace(text), n}, nil
	})
	return res.text, res.pages, err
}

// pageText is page i's text, a panic recovered as an error so that the
// pages read before it are kept.
func pageText(rd *pdf.Reader, i int) (text string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: page %d: %v", ErrParserPanic, i, p)
		}
	}()
	return walkText(rd.Page(i), int(DefaultMaxTextBytes))
}

// walkText is the page's text in content-stream order, at most max bytes.
// Unlike the library's GetPlainText it breaks lines where the text moves
// down (Td, TD, Tm, T*, ', ") and puts a space where it moves right or a
// TJ kerning gap is wide, so "Region" does not run into "FY2025".
func walkText(p pdf.Page, max int) (string, error) {
	if p.V.IsNull() || p.V.Key("Contents").Kind() == pdf.Null {
		return "", nil
	}
	var b strings.Builder
	encs := map[string]pdf.TextEncoding{}
	var enc pdf.TextEncoding
	var y float64
	write := func(s string) {
		if b.Len()+len(s) <= max {
			b.WriteString(s)
		}
	}
	show := func(raw string) {
		if enc != nil {
			raw = enc.Decode(raw)
		}
		write(raw)
	}
	breakLine := func() {
		if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
			write("\n")
		}
	}
	space := func() {
		if s := b.String(); s != "" && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\n") {
			write(" ")
		}
	}
	var args []pdf.Value
	pdf.Interpret(p.V.Key("Contents"), func(stk *pdf.Stack, op string) {
		args = args[:0]
		for n := stk.Len(); n > 0; n-- {
			args = append(args, pdf.Value{})
		}
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT":
			y = 0
		case "Tf":
			if len(args) == 2 {
				name := args[0].Name()
				e, ok := encs[name]
				if !ok {
					f := p.Font(name)
					e = f.Encoder()
					encs[name] = e
				}
				enc = e
			}
		case "Td", "TD":
			if len(args) == 2 {
				if dy := args[1].Float64(); dy != 0 {
					breakLine()
				} else if args[0].Float64() > 0 {
					space()
				}
			}
		case "Tm":
			if len(args) == 6 {
				if ny := args[5].Float64(); ny != y {
					breakLine()
					y = ny
				} else {
					space()
				}
			}
		case "T*":
			breakLine()
		case "'", "\"":
			breakLine()
			if len(args) > 0 {
				show(args[len(args)-1].RawString())
			}
		case "Tj":
			if len(args) == 1 {
				show(args[0].RawString())
			}
		case "TJ":
			if len(args) == 1 {
				for i := 0; i < args[0].Len(); i++ {
					x := args[0].Index(i)
					switch x.Kind() {
					case pdf.String:
						show(x.RawString())
					case pdf.Integer, pdf.Real:
						if x.Float64() < -200 { // a gap of a fifth of an em or more
							space()
						}
					}
				}
			}
		}
	})
	return strings.TrimSpace(b.String()), nil
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
