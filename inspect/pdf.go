package inspect

// STUB by helper SUMMARIES so the branch compiles; helper QUERY owns this
// file and replaces it at merge.

import (
	"context"
	"errors"
	"io"
)

// errNotImplemented is the stubs' error.
var errNotImplemented = errors.New("inspect: not implemented in this build")

func inspectPDF(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (Summary, []TextPart, error) {
	return Summary{Kind: "pdf", Format: "pdf"}, nil, nil
}

// PDFPageText returns the text of page (1-based) and the page count.
func PDFPageText(ctx context.Context, r io.ReaderAt, size int64, page int) (text string, pages int, err error) {
	return "", 0, errNotImplemented
}
