package query

// The grep and lines modes over a document whose bytes are not its text
// (a PDF, an office document inside a ZIP): they read the text package
// inspect extracts, part by part ("page 3", "entry word/document.xml"),
// and name every line by its part and its line there ("page 3, line
// 12"), as artifacts_search names its hits. A model that greps first
// then gets its answer in one round trip instead of a refusal.

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/inspect"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

// extractedText is a document's text as inspect extracts it.
type extractedText struct {
	parts []inspect.TextPart
	// partial is the cap that stopped the extraction ("time", "bytes",
	// "text"), "" when it read the whole document.
	partial string
	// whose names the text in answers: "the PDF's", "the document's".
	whose string
}

// hasExtractedText reports whether the grep and lines modes read an
// artifact of type mime through inspect rather than as bytes.
func hasExtractedText(mime string) bool { return mime == "application/pdf" || isArchive(mime) }

// extractText reads ref's text through inspect.Inspect. What the reader
// holds (inspect.Limits.Footprint) is reserved from b.Memory first; the
// caller holds the reservation, with the text, until it calls release.
// An archive's parts that only name an entry are left out: its text is an
// office document's body.
func extractText(ctx context.Context, st store.Store, ref store.Ref, b Budget) (x extractedText, release func(), err error) {
	lim := inspect.Limits{Timeout: b.Timeout, MaxTextBytes: b.maxInput()}
	kind := "archive"
	x.whose = "the document's"
	if ref.MIMEType == "application/pdf" {
		kind, x.whose = "pdf", "the PDF's"
	}
	release, err = b.reserve(ctx, lim.Footprint(kind, ref.SizeBytes), "a query over a document's text")
	if err != nil {
		return x, nil, err
	}
	ra, closeFn, err := readerAt(ctx, st, ref)
	if err != nil {
		release()
		return x, nil, err
	}
	defer closeFn()
	sum, parts, err := inspect.Inspect(ctx, ra, ref.SizeBytes, ref.MIMEType, lim)
	if err != nil {
		release()
		return x, nil, err
	}
	x.partial = sum.Partial
	for _, p := range parts {
		if entry, ok := strings.CutPrefix(p.Place, "entry "); ok && p.Text == entry {
			continue
		}
		x.parts = append(x.parts, p)
	}
	return x, release, nil
}

// stopped says where the extraction stopped short, "" when it did not.
func (x extractedText) stopped() string {
	if x.partial == "" {
		return ""
	}
	after := ""
	if len(x.parts) > 0 {
		after = " after " + x.parts[len(x.parts)-1].Place
	}
	return fmt.Sprintf("text extraction stopped at its %s cap%s; what follows is not read here", x.partial, after)
}

// grepExtracted is runGrep over ref's extracted text: each part is
// grepped on its own, its lines numbered from 1, and context does not
// cross from one part into the next.
func grepExtracted(ctx context.Context, st store.Store, ref store.Ref, g *grepper, expr string, b Budget) (Answer, error) {
	x, release, err := extractText(ctx, st, ref, b)
	if err != nil {
		return Answer{}, err
	}
	defer release()
	if len(x.parts) == 0 && x.partial == "" {
		if ref.MIMEType != "application/pdf" {
			return Answer{}, notText(ref)
		}
		return Answer{Cut: "the PDF has no text to grep (its pages are scanned or drawn); ask for page N"}, nil
	}
	for _, p := range x.parts {
		g.startPart(p.Place + ", line ")
		if g.context > 0 {
			g.byLine([]byte(p.Text), 1)
		} else {
			g.chunk([]byte(p.Text), 1)
		}
		if err := ctx.Err(); err != nil {
			return Answer{}, err
		}
	}
	a := Answer{Text: strings.TrimSuffix(g.out.String(), "\n"), Total: g.matches}
	var cut []string
	switch {
	case a.Total == 0:
		a.Text = ""
		cut = append(cut, fmt.Sprintf("no line of %s text matches %q", x.whose, expr))
	case g.full:
		more := "narrow the regex"
		if page, ok := strings.CutPrefix(g.lastPlace, "page "); ok {
			more += ", or ask for page " + strings.TrimSuffix(page, ", line ") + " to read on"
		}
		cut = append(cut, fmt.Sprintf("%s of %s matching lines shown (up to %s%s); %s",
			humanize.Count(g.shown), humanize.Count(g.matches), g.lastPlace, humanize.Count(g.lastMatch), more))
	}
	if s := x.stopped(); s != "" {
		cut = append(cut, s)
	}
	a.Cut = strings.Join(cut, "; ")
	return a, nil
}

// linesExtracted is runLines over ref's extracted text: lines are counted
// through the parts in order, and each shown line is named by its part
// and its line there.
func linesExtracted(ctx context.Context, st store.Store, ref store.Ref, rg Range, b Budget) (Answer, error) {
	x, release, err := extractText(ctx, st, ref, b)
	if err != nil {
		return Answer{}, err
	}
	defer release()
	if len(x.parts) == 0 && x.partial == "" && ref.MIMEType != "application/pdf" {
		return Answer{}, notText(ref)
	}
	limit := b.textLimit()
	var (
		out             bytes.Buffer
		n               int64 // lines counted so far
		shownTo         int64
		shownAt, cutMsg string
		done            bool // the budget is spent: only count
	)
	for _, p := range x.parts {
		text := p.Text
		for local := int64(1); text != ""; local++ {
			line, rest, _ := strings.Cut(text, "\n")
			text = rest
			n++
			if n < rg.From || (rg.To != 0 && n > rg.To) || done {
				continue
			}
			label := p.Place + ", line " + strconv.FormatInt(local, 10)
			s := label + ":" + line + "\n"
			switch {
			case out.Len()+len(s) <= limit:
				out.WriteString(s)
				shownTo, shownAt = n, label
			case n == rg.From:
				// The first line alone is over the budget: show its start.
				out.WriteString(cutUTF8(s, limit))
				cutMsg = fmt.Sprintf("line %d (%s) is longer than the budget: its first %s bytes shown; ask for %s",
					n, label, humanize.Count(int64(limit)), p.Place)
				done = true
			default:
				done = true
			}
		}
		if err := ctx.Err(); err != nil {
			return Answer{}, err
		}
	}
	if rg.From > n {
		return Answer{}, fmt.Errorf("%w: line %d: %s has %s lines of text", ErrOutOfRange, rg.From, ref.ID, humanize.Count(n))
	}
	a := Answer{Text: strings.TrimSuffix(out.String(), "\n"), Total: n}
	var cut []string
	switch {
	case cutMsg != "":
		cut = append(cut, cutMsg)
	case (rg.To == 0 || rg.To > shownTo) && shownTo < n:
		k := shownTo - rg.From + 1
		cut = append(cut, fmt.Sprintf("lines %d-%d of %s %s lines of text shown (to %s); ask for lines %d-%d",
			rg.From, shownTo, x.whose, humanize.Count(n), shownAt, shownTo+1, min(n, shownTo+k)))
	}
	if s := x.stopped(); s != "" {
		cut = append(cut, s)
	}
	a.Cut = strings.Join(cut, "; ")
	return a, nil
}
