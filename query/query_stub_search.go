// Package query answers questions about one stored artifact within a
// budget. (SEARCH's stub of QUERY's package: Lines and Grep only, replaced
// at merge.)
package query

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// Range is 1-based inclusive for lines; 0-based [From,To) for bytes.
type Range struct{ From, To int64 }

// Request says what to read: exactly one mode.
type Request struct {
	Lines   *Range
	Bytes   *Range
	Grep    string
	Context int
	JSON    string
	JQ      string
	Page    int
	Entry   string
}

// Budget bounds an answer.
type Budget struct {
	MaxChars  int
	Timeout   time.Duration
	MaxMemory int64
}

// Answer is what the model reads.
type Answer struct {
	Text   string     `json:"text"`
	Cut    string     `json:"cut,omitempty"`
	Stored *store.Ref `json:"stored,omitempty"`
	Total  int64      `json:"total,omitempty"`
}

// Sentinel errors.
var (
	ErrBadRequest = errors.New("query: bad request")
	ErrOutOfRange = errors.New("query: out of range")
	ErrBadRegex   = errors.New("query: invalid regular expression")
	ErrBadProgram = errors.New("query: invalid program")
	ErrBudget     = errors.New("query: over budget")
	ErrNotText    = errors.New("query: not text")
)

// Run answers req about ref's bytes (stub: lines and grep).
func Run(ctx context.Context, st store.Store, ref store.Ref, req Request, b Budget) (Answer, error) {
	if b.MaxChars <= 0 {
		b.MaxChars = 10000
	}
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		return Answer{}, err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out strings.Builder
	var a Answer
	switch {
	case req.Lines != nil:
		n := int64(0)
		for sc.Scan() {
			n++
			if n >= req.Lines.From && n <= req.Lines.To {
				if out.Len()+len(sc.Text())+1 > b.MaxChars {
					a.Cut = fmt.Sprintf("cut at line %d: ask for lines %d-%d", n-1, n, req.Lines.To)
					break
				}
				out.WriteString(sc.Text() + "\n")
			}
		}
		if req.Lines.From > n {
			return Answer{}, fmt.Errorf("%w: line %d of %d", ErrOutOfRange, req.Lines.From, n)
		}
		a.Total = n
	case req.Grep != "":
		re, err := regexp.Compile(req.Grep)
		if err != nil {
			return Answer{}, fmt.Errorf("%w: %v", ErrBadRegex, err)
		}
		n := int64(0)
		for sc.Scan() {
			n++
			if re.MatchString(sc.Text()) {
				a.Total++
				l := fmt.Sprintf("%d:%s\n", n, sc.Text())
				if a.Cut == "" && out.Len()+len(l) > b.MaxChars {
					a.Cut = fmt.Sprintf("matches after line %d cut: narrow the pattern or ask for lines", n-1)
				}
				if a.Cut == "" {
					out.WriteString(l)
				}
			}
		}
	default:
		return Answer{}, fmt.Errorf("%w: the stub handles lines and grep", ErrBadRequest)
	}
	a.Text = out.String()
	return a, sc.Err()
}
