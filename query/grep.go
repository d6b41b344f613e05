package query

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

// grepLineMax is the most of one matching line shown: a window around the
// match in a longer (minified) line.
const grepLineMax = 500

// grepper finds matching lines in whole-line chunks. With no context it
// searches each chunk as one text: a plain literal costs one bytes.Index
// pass; a regexp holding a literal is run only on the lines that hold it;
// any other regexp runs over the chunk (its literal prefix, if any, is
// found by the regexp package with bytes.Index), not once per line.
type grepper struct {
	re        *regexp.Regexp
	literal   []byte // the whole pattern when it is a plain literal
	must      []byte // a literal every match holds (a prefilter), when literal is nil
	find      finder // finds literal or must
	limit     int
	out       bytes.Buffer
	full      bool  // the budget is spent: only count
	matches   int64 // matching lines
	shown     int64 // matching lines shown
	lastMatch int64
	context   int
	// place names the lines of the text being grepped before their
	// numbers ("page 3, line "); "" for an artifact that is text.
	place string
	// lastPlace is place when the last match shown was.
	lastPlace string
	// newPart: the next line shown starts a part of its own, after a
	// separator when something was shown before.
	newPart bool
	// context state
	before    []numbered // the lines before the current one (at most context)
	after     int        // context lines still to show after a match
	lastShown int64
}

type numbered struct {
	n    int64
	text string
}

func compileGrep(expr string) (re *regexp.Regexp, literal, must []byte, fold bool, err error) {
	re, err = regexp.Compile("(?m)" + expr)
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("%w: %w", ErrBadRegex, err)
	}
	if p, complete := re.LiteralPrefix(); complete && p != "" && !strings.Contains(p, "\n") {
		return re, []byte(p), nil, false, nil
	}
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil {
		m, f := requiredLiteral(tree.Simplify())
		if f {
			m = foldablePiece(m)
		}
		if len(m) >= 3 && !strings.Contains(m, "\n") {
			must, fold = []byte(m), f
		}
	}
	return re, nil, must, fold, nil
}

// requiredLiteral is the longest literal that every match of re contains,
// and whether it matches case-folded: a literal, or the longest literal
// factor of a concatenation ("" when there is none).
func requiredLiteral(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpConcat:
		best, fold := "", false
		for _, sub := range re.Sub {
			if m, f := requiredLiteral(sub); len(m) > len(best) {
				best, fold = m, f
			}
		}
		return best, fold
	}
	return "", false
}

func runGrep(ctx context.Context, st store.Store, ref store.Ref, expr string, context int, b Budget) (Answer, error) {
	// Each context line is held (up to grepLineMax) until it is shown,
	// and an answer shows at most one per 3 characters ("N-\n").
	if most := b.textLimit() / 3; context > most {
		return Answer{}, fmt.Errorf("%w: context %s is over the %s lines an answer of %s characters shows; ask for fewer",
			ErrBadRequest, humanize.Count(int64(context)), humanize.Count(int64(most)), humanize.Count(int64(b.MaxChars)))
	}
	re, lit, must, fold, err := compileGrep(expr)
	if err != nil {
		return Answer{}, err
	}
	g := &grepper{re: re, literal: lit, must: must, limit: b.textLimit(), context: context}
	if lit != nil {
		g.find = newFinder(lit, false)
	} else if must != nil {
		g.find = newFinder(must, fold)
	}
	if hasExtractedText(ref.MIMEType) {
		return grepExtracted(ctx, st, ref, g, expr, b)
	}
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		return Answer{}, err
	}
	defer rc.Close()
	if err := g.scan(ctx, rc, b, ref); err != nil {
		return Answer{}, err
	}
	a := Answer{Text: strings.TrimSuffix(g.out.String(), "\n"), Total: g.matches}
	if a.Total == 0 {
		a.Text = ""
		a.Cut = fmt.Sprintf("no line matches %q", expr)
	} else if g.full {
		a.Cut = fmt.Sprintf("%s of %s matching lines shown (up to line %s); narrow the regex, or ask for lines %d- to read on",
			humanize.Count(g.shown), humanize.Count(g.matches), humanize.Count(g.lastMatch), g.lastMatch+1)
	}
	return a, nil
}

// scan reads r in chunks that end at a line end and greps each. Its
// buffer, and each growth of it for a long line (up to b.maxInput()), is
// reserved from b.Memory before it is allocated.
func (g *grepper) scan(ctx context.Context, r io.Reader, b Budget, ref store.Ref) error {
	release, err := b.reserve(ctx, readBuffer*4, "a grep query")
	if err != nil {
		return err
	}
	defer func() { release() }()
	buf := make([]byte, readBuffer*4)
	have := 0
	var line int64 = 1 // the number of the first line in buf
	first := true
	for {
		n, err := io.ReadFull(r, buf[have:])
		have += n
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return err
		}
		if first {
			first = false
			if !looksText(buf[:min(have, 8<<10)]) || binaryMIME(ref.MIMEType) {
				return notText(ref)
			}
		}
		end := have
		if !eof {
			end = bytes.LastIndexByte(buf[:have], '\n') + 1
			if end == 0 {
				// One line fills the buffer: grow it, up to b.maxInput().
				if int64(len(buf)) < b.maxInput() {
					more, err := b.reserve(ctx, int64(2*len(buf)), "a grep query's long line")
					if err != nil {
						return err
					}
					grown := make([]byte, 2*len(buf))
					copy(grown, buf[:have])
					buf = grown
					release()
					release = more
					continue
				}
				end = have
			}
		}
		chunk := buf[:end]
		if g.context > 0 {
			g.byLine(chunk, line)
		} else {
			g.chunk(chunk, line)
		}
		line += int64(bytes.Count(chunk, []byte{'\n'}))
		if eof {
			return nil
		}
		have = copy(buf, buf[end:have])
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// chunk counts and shows the matching lines of chunk, whose first line is
// number line.
func (g *grepper) chunk(chunk []byte, line int64) {
	pos, counted := 0, 0
	for pos < len(chunk) {
		var ms, me int
		switch {
		case g.literal != nil:
			i := g.find.index(chunk[pos:])
			if i < 0 {
				return
			}
			ms, me = pos+i, pos+i+len(g.literal)
		case g.must != nil:
			// Find the next line holding the required literal, then run
			// the regexp on that line alone.
			i := g.find.index(chunk[pos:])
			if i < 0 {
				return
			}
			ls := bytes.LastIndexByte(chunk[pos:pos+i], '\n') + 1 + pos
			le := len(chunk)
			if j := bytes.IndexByte(chunk[pos+i:], '\n'); j >= 0 {
				le = pos + i + j
			}
			loc := g.re.FindIndex(chunk[ls:le])
			if loc == nil {
				pos = le + 1
				continue
			}
			ms, me = ls+loc[0], ls+loc[1]
		default:
			loc := g.re.FindIndex(chunk[pos:])
			if loc == nil {
				return
			}
			ms, me = pos+loc[0], pos+loc[1]
		}
		ls := bytes.LastIndexByte(chunk[pos:ms], '\n') + 1 + pos
		le := len(chunk)
		if i := bytes.IndexByte(chunk[ms:], '\n'); i >= 0 {
			le = ms + i
		}
		if me > le && !g.re.Match(chunk[ls:le]) {
			pos = le + 1 // the match spanned lines; this line has none
			continue
		}
		line += int64(bytes.Count(chunk[counted:ls], []byte{'\n'}))
		counted = ls
		g.matches++
		if !g.full {
			g.show(line, ':', chunk[ls:le], ms-ls)
		}
		pos = le + 1
	}
}

// byLine greps chunk line by line, showing context lines around matches.
func (g *grepper) byLine(chunk []byte, line int64) {
	for len(chunk) > 0 {
		text := chunk
		rest := []byte(nil)
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			text, rest = chunk[:i], chunk[i+1:]
		}
		chunk = rest
		n := line
		line++
		if g.full {
			// Only counting now.
			if (g.literal != nil && bytes.Contains(text, g.literal)) || (g.literal == nil && g.re.Match(text)) {
				g.matches++
			}
			continue
		}
		if loc := g.re.FindIndex(text); loc != nil {
			g.matches++
			if g.lastShown != 0 && (g.newPart || n-int64(len(g.before)) > g.lastShown+1) {
				g.write("--\n")
			}
			g.newPart = false
			for _, b := range g.before {
				g.show(b.n, '-', []byte(b.text), 0)
			}
			g.before = g.before[:0]
			g.show(n, ':', text, loc[0])
			g.after = g.context
			continue
		}
		if g.after > 0 {
			g.after--
			g.show(n, '-', text, 0)
			continue
		}
		g.before = append(g.before, numbered{n, string(text[:min(len(text), grepLineMax)])})
		if len(g.before) > g.context {
			g.before = g.before[1:]
		}
	}
}

// show writes one line, "N:text" for a match and "N-text" for context,
// or marks the budget spent.
func (g *grepper) show(n int64, sep byte, text []byte, at int) {
	if g.full {
		return
	}
	if len(text) > grepLineMax {
		from := max(0, at-grepLineMax/3)
		w := cutUTF8(text[from:], grepLineMax)
		text = append(append([]byte("…"), w...), "…"...)
		if from == 0 {
			text = text[len("…"):]
		}
	}
	s := g.place + strconv.FormatInt(n, 10) + string(sep) + string(text) + "\n"
	if g.out.Len()+len(s) > g.limit {
		g.full = true
		return
	}
	g.out.WriteString(s)
	g.lastShown = n
	if sep == ':' {
		g.lastMatch, g.lastPlace = n, g.place
		g.shown++
	}
}

// startPart starts the lines of a part of a document's extracted text,
// named by place ("page 3, line "): context lines are the part's own.
func (g *grepper) startPart(place string) {
	g.place, g.newPart = place, true
	g.before, g.after = g.before[:0], 0
}

func (g *grepper) write(s string) {
	if g.out.Len()+len(s) <= g.limit {
		g.out.WriteString(s)
	}
}
