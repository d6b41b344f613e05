package store

import (
	"errors"
	"fmt"

	"github.com/mcpx-dev/mcpx/store/internal/searchq"
)

// ErrQueryTooLong is returned by CheckSearchQuery for a query past its
// caps.
var ErrQueryTooLong = errors.New("store: search query too long")

// CheckSearchQuery refuses a search query of more than maxChars bytes or
// more than maxTerms words and "quoted phrases" (counted as Searchers
// count them); a cap <= 0 is none. A search costs more with each term
// (the fsstore's FTS5 index intersects a list per term; the memory and
// S3 stores score every line per term: a 150,000-word query ran 60 s and
// took 482 MB), so callers that search for others check first.
func CheckSearchQuery(q string, maxChars, maxTerms int) error {
	if maxChars > 0 && len(q) > maxChars {
		return fmt.Errorf("%w: it has %d characters, over the %d a search takes; search with fewer, rarer words",
			ErrQueryTooLong, len(q), maxChars)
	}
	if maxTerms <= 0 {
		return nil
	}
	if n := len(searchq.Parse(q)); n > maxTerms {
		return fmt.Errorf("%w: it has %d words and phrases, over the %d a search takes; search with fewer, rarer words",
			ErrQueryTooLong, n, maxTerms)
	}
	return nil
}
