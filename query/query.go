// Package query answers a question about one stored artifact without
// handing over all of its bytes: a window of lines or bytes, the lines a
// regular expression matches, a gjson path or a jq program over JSON, a
// PDF page's text, an archive member or an image view of a region of a
// stored image. Every answer fits a budget of
// characters and says what was cut and how to ask for the next part;
// binary bytes never come back as text and text never as base64.
//
// The caller checks that the artifact is in the asker's scope before
// calling Run.
package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/inspect"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store"
)

// Sentinel errors; Run wraps them with %w and a message that says what to
// ask instead.
var (
	// ErrBadRequest: not exactly one mode, or a mode's argument is unusable.
	ErrBadRequest = errors.New("query: bad request")
	// ErrOutOfRange: a line, byte range, page, path or entry the artifact
	// does not have.
	ErrOutOfRange = errors.New("query: out of range")
	// ErrBadRegex: the grep expression does not compile.
	ErrBadRegex = errors.New("query: invalid regular expression")
	// ErrBadProgram: the jq program does not parse or compile, or fails.
	ErrBadProgram = errors.New("query: invalid jq program")
	// ErrBudget: the query needed more time or memory than its Budget.
	ErrBudget = errors.New("query: over budget")
	// ErrNotJSON is wrapped by a JQ's error for input that is not JSON;
	// Run answers it as ErrBadRequest.
	ErrNotJSON = errors.New("not JSON")
	// ErrNotText: a text mode was asked of binary bytes.
	ErrNotText = errors.New("query: artifact is not text")
)

// Budget defaults.
const (
	// DefaultMaxChars bounds Answer.Text and Answer.Cut together.
	DefaultMaxChars = 10000
	// MinMaxChars is the smallest budget: a smaller MaxChars is raised to
	// it, so that the Cut (up to ~200 characters) leaves room for text.
	MinMaxChars = 400
	// DefaultTimeout bounds one Run.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxMemory bounds what a Run holds: JSON and jq inputs may be
	// a quarter of it (they grow when decoded), an archive entry likewise,
	// and a jq program runs in a process whose memory the kernel caps at
	// it (see JQ).
	DefaultMaxMemory int64 = 256 << 20
	// DefaultMaxDepth bounds how deep a JSON artifact may nest for a json
	// path query: gjson walks nesting by recursion, a frame per level
	// (2 million levels took 468 MB of stack, 8 million overflowed it).
	// It is encoding/json's own limit, which the jq mode's decoder has.
	DefaultMaxDepth = 10000
	// DefaultMaxExprChars bounds a json path, jq program or grep
	// expression: gjson and gojq parse nested brackets by recursion.
	DefaultMaxExprChars = 4096
)

// Range is a window of an artifact. For Lines it is 1-based and inclusive
// (lines 1-180); for Bytes it is 0-based and half-open ([0,4096)). A To of
// 0 means "as much as fits the budget".
type Range struct{ From, To int64 }

// Request asks one thing of an artifact: exactly one of Lines, Bytes,
// Grep, JSON, JQ, Page, Entry and Region is set. Context is the number of
// lines shown around each grep match.
type Request struct {
	Lines   *Range `json:"lines,omitempty"`
	Bytes   *Range `json:"bytes,omitempty"`
	Grep    string `json:"grep,omitempty"`
	Context int    `json:"context,omitempty"`
	JSON    string `json:"json,omitempty"`
	JQ      string `json:"jq,omitempty"`
	Page    int    `json:"page,omitempty"`
	// View is how a Page is answered: ViewText (the default) its text,
	// ViewImage the page rendered as an image (Answer.Image), fitted to
	// Budget.ImageView, for a scan or a chart that has no text to read.
	View  string `json:"view,omitempty"`
	Entry string `json:"entry,omitempty"`
	// Region asks for an image view of part of a stored image
	// (Answer.Image), fitted to Budget.ImageView.
	Region *Region `json:"region,omitempty"`
}

// Views of a PDF page (Request.View).
const (
	ViewText  = "text"
	ViewImage = "image"
)

// Budget bounds a Run; zero fields take their defaults. Characters are
// counted as UTF-8 bytes, which never undercounts.
type Budget struct {
	MaxChars  int
	Timeout   time.Duration
	MaxMemory int64
	// MaxDepth is how deep a JSON artifact may nest for a json path
	// query (DefaultMaxDepth); a deeper one is refused before gjson
	// reads it, with its depth.
	MaxDepth int
	// MaxExprChars is the longest json path, jq program or grep
	// expression a Run takes (DefaultMaxExprChars).
	MaxExprChars int
	// JQ runs the JQ mode's programs (query/jq's Run); without it the
	// mode is refused.
	JQ JQ
	// Memory is the process's memory budget, shared with every other
	// query, image and inspection: a Run reserves what it may hold from
	// it before it allocates, and waits (until its deadline) while other
	// work holds it. Nil: no shared budget, MaxMemory alone bounds a Run.
	Memory *membudget.Budget
	// ImageView is the view a region's image is fitted to: the client's
	// longest side and encoded size (MaxSide, MaxBytes; zero fields take
	// imageview's defaults). MaxSourcePixels and MaxSourceBytes do not
	// apply: a region's decode is bounded by MaxMemory, so that part of
	// an image too large for a whole view can be seen.
	ImageView imageview.Limits
}

// JQ runs a jq program over each JSON value that input holds, in turn,
// within lim, and answers its outputs' JSON encodings, one a line. Its
// errors wrap ErrBadProgram (the program does not compile, or fails),
// ErrNotJSON (input is not JSON: the error says where) or ErrBudget (the
// program needed more than lim.MaxMemory), or are ctx's. query/jq's Run
// is one, on gojq in a child process whose memory the kernel caps, kept
// apart so that a binary that runs no jq links none.
type JQ func(ctx context.Context, program string, input io.Reader, lim JQLimits) (JQAnswer, error)

// JQLimits bound one JQ run.
type JQLimits struct {
	// MaxOutput is the most bytes of JQAnswer.Text: the run stops at the
	// first output that does not fit (JQAnswer.Full), and shows the start
	// of it only when it is the first.
	MaxOutput int
	// MaxMemory is the most the evaluator may allocate, its copy of the
	// input included.
	MaxMemory int64
}

// JQAnswer is what a JQ run printed.
type JQAnswer struct {
	Text    string `json:"text"`    // the outputs' JSON, one a line
	Results int64  `json:"results"` // outputs counted, the one that did not fit included
	Full    bool   `json:"full"`    // the run stopped at MaxOutput
}

// Answer is what Run found.
type Answer struct {
	Text   string     `json:"text"`             // what the model reads; never base64
	Cut    string     `json:"cut,omitempty"`    // what was cut and how to ask for the next part
	Stored *store.Ref `json:"stored,omitempty"` // a binary entry stored as its own artifact
	Total  int64      `json:"total,omitempty"`  // lines/bytes/matches/pages in all
	// Image is a region's view, or a PDF page's, for an image content
	// block; Text describes it.
	Image *imageview.Image `json:"-"`
}

func (b Budget) withDefaults() Budget {
	if b.MaxChars <= 0 {
		b.MaxChars = DefaultMaxChars
	}
	b.MaxChars = max(b.MaxChars, MinMaxChars)
	if b.Timeout <= 0 {
		b.Timeout = DefaultTimeout
	}
	if b.MaxMemory <= 0 {
		b.MaxMemory = DefaultMaxMemory
	}
	if b.MaxDepth <= 0 {
		b.MaxDepth = DefaultMaxDepth
	}
	if b.MaxExprChars <= 0 {
		b.MaxExprChars = DefaultMaxExprChars
	}
	return b
}

// reserve holds n bytes of the process's memory budget for what a Run is
// about to allocate, waiting (until the Run's deadline) while other work
// holds it; the error says what was asked and what to do.
func (b Budget) reserve(ctx context.Context, n int64, what string) (release func(), err error) {
	release, err = b.Memory.Reserve(ctx, n, what)
	switch {
	case errors.Is(err, membudget.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w; ask for less (lines, grep)", ErrBudget, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w; try again shortly", ErrBudget, err)
	}
	return release, nil
}

// textLimit is the room left for Answer.Text once Answer.Cut is said.
func (b Budget) textLimit() int {
	return b.MaxChars - min(300, b.MaxChars/2)
}

// maxInput is the most bytes a mode that holds its input reads.
func (b Budget) maxInput() int64 { return b.MaxMemory / 4 }

// Run answers req about the artifact ref in st.
func Run(ctx context.Context, st store.Store, ref store.Ref, req Request, b Budget) (Answer, error) {
	b = b.withDefaults()
	if err := req.check(); err != nil {
		return Answer{}, err
	}
	if expr := req.JSON + req.JQ + req.Grep; len(expr) > b.MaxExprChars {
		return Answer{}, fmt.Errorf("%w: the %s is %s characters, over the %s a query takes; ask a shorter one",
			ErrBadRequest, req.exprName(), humanize.Count(int64(len(expr))), humanize.Count(int64(b.MaxExprChars)))
	}
	if req.Page != 0 && ref.MIMEType == "application/pdf" {
		// The reader's one-time start (seconds on a machine's first run,
		// more when it is loaded) is not the page's work: a first query
		// would run out of budget before the page was opened, and a CLI
		// process ending there would leave the compilation uncached, so
		// every later one would too.
		if err := inspect.StartPDFReader(ctx); err != nil {
			return Answer{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	a, err := run(ctx, st, ref, req, b)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrBudget) {
		err = fmt.Errorf("%w: the query ran past %v: %w", ErrBudget, b.Timeout, err)
	}
	if over := len(a.Text) + len(a.Cut) - b.MaxChars; over > 0 {
		// A Cut longer than its reserve (a long entry name) takes from the text.
		a.Text = cutUTF8(a.Text, max(0, len(a.Text)-over))
	}
	return a, err
}

func run(ctx context.Context, st store.Store, ref store.Ref, req Request, b Budget) (Answer, error) {
	switch {
	case req.Lines != nil:
		return runLines(ctx, st, ref, *req.Lines, b)
	case req.Bytes != nil:
		return runBytes(ctx, st, ref, *req.Bytes, b)
	case req.Grep != "":
		return runGrep(ctx, st, ref, req.Grep, req.Context, b)
	case req.JSON != "":
		return runJSON(ctx, st, ref, req.JSON, b)
	case req.JQ != "":
		return runJQ(ctx, st, ref, req.JQ, b)
	case req.Page != 0 && req.View == ViewImage:
		return runPageImage(ctx, st, ref, req.Page, b)
	case req.Page != 0:
		return runPage(ctx, st, ref, req.Page, b)
	case req.Region != nil:
		return runRegion(ctx, st, ref, *req.Region, b)
	default:
		return runEntry(ctx, st, ref, req.Entry, b)
	}
}

// check enforces exactly one mode with usable arguments.
func (r Request) check() error {
	n := 0
	for _, set := range []bool{r.Lines != nil, r.Bytes != nil, r.Grep != "", r.JSON != "", r.JQ != "", r.Page != 0, r.Entry != "", r.Region != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return fmt.Errorf("%w: ask exactly one of lines, bytes, grep, json, jq, page, entry, region (got %d)", ErrBadRequest, n)
	case r.Lines != nil && (r.Lines.From < 1 || (r.Lines.To != 0 && r.Lines.To < r.Lines.From)):
		return fmt.Errorf("%w: lines %d-%d: lines count from 1 and the range must not run backwards", ErrBadRequest, r.Lines.From, r.Lines.To)
	case r.Bytes != nil && (r.Bytes.From < 0 || (r.Bytes.To != 0 && r.Bytes.To <= r.Bytes.From)):
		return fmt.Errorf("%w: bytes %d-%d: offsets count from 0 and the range must not be empty", ErrBadRequest, r.Bytes.From, r.Bytes.To)
	case r.Page < 0:
		return fmt.Errorf("%w: page %d: pages count from 1", ErrBadRequest, r.Page)
	case r.View != "" && r.View != ViewText && r.View != ViewImage:
		return fmt.Errorf("%w: view %q: want %q or %q (of a page)", ErrBadRequest, r.View, ViewText, ViewImage)
	case r.View != "" && r.Page == 0:
		return fmt.Errorf("%w: view goes with page: a PDF page's text or image", ErrBadRequest)
	case r.Context < 0 || (r.Context > 0 && r.Grep == ""):
		return fmt.Errorf("%w: context goes with grep and is not negative", ErrBadRequest)
	case r.Region != nil && (r.Region.X < 0 || r.Region.Y < 0 || r.Region.Width < 0 || r.Region.Height < 0):
		return fmt.Errorf("%w: region %d, %d, %d, %d: x, y, width and height are pixels, not negative", ErrBadRequest, r.Region.X, r.Region.Y, r.Region.Width, r.Region.Height)
	}
	return nil
}

// exprName names the expression of a json, jq or grep request.
func (r Request) exprName() string {
	switch {
	case r.JSON != "":
		return "json path"
	case r.JQ != "":
		return "jq program"
	}
	return "grep expression"
}

// ParseRange reads "A-B", "A-" or "A" as a Range.
func ParseRange(s string) (Range, error) {
	from, to, dash := cutDash(s)
	a, err := strconv.ParseInt(from, 10, 64)
	if err != nil {
		return Range{}, fmt.Errorf("%w: range %q is not A-B", ErrBadRequest, s)
	}
	if !dash {
		return Range{a, a}, nil
	}
	if to == "" {
		return Range{a, 0}, nil
	}
	b, err := strconv.ParseInt(to, 10, 64)
	if err != nil {
		return Range{}, fmt.Errorf("%w: range %q is not A-B", ErrBadRequest, s)
	}
	return Range{a, b}, nil
}

func cutDash(s string) (string, string, bool) {
	if i := bytes.IndexByte([]byte(s), '-'); i > 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// readerAt gives random access to an artifact: the store's reader when it
// has ReadAt (fsstore, memstore), else a ranged Get per read.
func readerAt(ctx context.Context, st store.Store, ref store.Ref) (io.ReaderAt, func(), error) {
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		return nil, nil, err
	}
	if ra, ok := rc.(io.ReaderAt); ok {
		return ra, func() { rc.Close() }, nil
	}
	rc.Close()
	return rangedReader{ctx, st, ref.ID}, func() {}, nil
}

type rangedReader struct {
	ctx context.Context
	st  store.Store
	id  string
}

func (r rangedReader) ReadAt(p []byte, off int64) (int, error) {
	rc, _, err := r.st.Get(r.ctx, r.id, &store.Range{Offset: off, Length: int64(len(p))})
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

// looksText reports whether b is UTF-8 without NUL bytes; a character cut
// at either end of b is allowed.
func looksText(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	for i := 0; i < 3 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	if utf8.Valid(b) {
		return true
	}
	for i := 1; i <= 3 && i <= len(b); i++ {
		if utf8.Valid(b[:len(b)-i]) {
			return true
		}
	}
	return false
}

// binaryMIME reports whether mime names bytes that are not to be read as
// text even when they happen to be ASCII (a PDF, an archive, media).
func binaryMIME(mime string) bool {
	return mime == "application/pdf" || isArchive(mime) || strings.HasPrefix(mime, "image/") ||
		strings.HasPrefix(mime, "audio/") || strings.HasPrefix(mime, "video/")
}

// notText is the ErrNotText for ref, with the mode to use instead.
func notText(ref store.Ref) error {
	hint := "ask for bytes A-B for a hex dump"
	switch {
	case ref.MIMEType == "application/pdf":
		hint = "ask for page N for a page's text"
	case isArchive(ref.MIMEType):
		hint = "ask for entry NAME for an archive member"
	}
	return fmt.Errorf("%w: %s is %s; %s", ErrNotText, ref.ID, orUnknown(ref.MIMEType), hint)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "binary"
	}
	return mime
}

// cutUTF8 cuts b to at most n bytes without splitting a character.
func cutUTF8[T string | []byte](b T, n int) T {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}
