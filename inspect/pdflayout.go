package inspect

// Words and lines from a page's characters and their boxes, joined as
// poppler's pdftotext joins them (TextOutputDev): a line is the characters
// that share a baseline band, read left to right; a space goes where the
// gap between two glyphs is wider than a tenth of the font's size or where
// the document has a space; ligatures (fi, ffl) become their letters; a run
// of right-to-left script, drawn left to right, is put back in reading
// order. Characters arrive in content order, so a column or a table row the
// document draws as a unit stays one.

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
)

const (
	// wordGap is the gap between two glyphs, in font sizes, past which
	// they are two words: poppler's minWordBreakSpace.
	wordGap = 0.1
	// dupOverlap is how close, in glyph widths, a glyph drawn again with
	// the same character must sit to be the same one (text drawn twice to
	// look bold).
	dupOverlap = 0.3
	// columnGap is the gap, in mean character widths, from which a gap is
	// spelt with as many spaces as it is wide.
	columnGap = 3
	// dupWindow is how many glyphs before it a duplicate is looked for,
	// and maxLineGlyphs how many glyphs a line gathers before it is
	// written out: a hostile page drawing a million glyphs on one baseline,
	// or at one spot, costs no more than a page of lines.
	dupWindow     = 8
	maxLineGlyphs = 4096
)

// pdfChar is a character, its loose box (its font's ascent to descent,
// its advance wide) and origin in page space, its font size, and rot
// quarter turns counter-clockwise from upright.
type pdfChar struct {
	r                        rune
	left, top, right, bottom float32
	x, y                     float32 // origin
	size                     float32
	rot                      uint8
}

// quarterTurns rounds a character's angle as PDFium gives it (radians,
// clockwise: text turned a quarter counter-clockwise, reading upwards, is
// at 3π/2) to quarter turns counter-clockwise, as poppler reads rotated
// text; a negative angle (unknown) is upright.
func quarterTurns(angle float32) uint8 {
	if angle < 0 || math.IsNaN(float64(angle)) {
		return 0
	}
	return uint8((4 - int(math.Round(float64(angle)/(math.Pi/2)))%4) % 4)
}

// isLayoutSpace reports whether r only separates: spaces and line breaks.
func isLayoutSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\r', '\n', 0xa0:
		return true
	}
	return false
}

// glyph is a character in its line's frame: x along the reading direction,
// y up; start is where its advance starts, at or before x0.
type glyph struct {
	r              rune
	x0, x1, y0, y1 float32
	start          float32
	size           float32
}

// frame turns c's box so that its text runs along x.
func frame(c pdfChar) glyph {
	g := glyph{r: c.r, size: c.size}
	var ox float32
	switch c.rot {
	case 1: // reads upwards
		g.x0, g.x1, g.y0, g.y1, ox = c.bottom, c.top, -c.right, -c.left, c.y
	case 2: // upside down
		g.x0, g.x1, g.y0, g.y1, ox = -c.right, -c.left, -c.top, -c.bottom, -c.x
	case 3: // reads downwards
		g.x0, g.x1, g.y0, g.y1, ox = -c.top, -c.bottom, c.left, c.right, -c.y
	default:
		g.x0, g.x1, g.y0, g.y1, ox = c.left, c.right, c.bottom, c.top, c.x
	}
	if g.x1 < g.x0 {
		g.x0, g.x1 = g.x1, g.x0
	}
	if g.y1 < g.y0 {
		g.y0, g.y1 = g.y1, g.y0
	}
	// PDFium gives the glyph's own box, not its advance, for pieces of a
	// ligature and for some right-to-left text: a glyph whose side bearing
	// leaves a gap would otherwise stand apart from its word.
	g.start = min(g.x0, ox)
	if g.size <= 0 {
		g.size = g.y1 - g.y0
	}
	return g
}

// pageLayout gathers a page's characters into text, at most max bytes.
// The zero value with max set is ready.
type pageLayout struct {
	b   strings.Builder
	max int
	// the line being gathered: its glyphs, their rotation, and the band of
	// its first glyph that later ones must share.
	line     []glyph
	rot      uint8
	band     [2]float32
	lineRune []rune // scratch for a line's characters
}

// add takes the next character in content order.
func (l *pageLayout) add(c pdfChar) {
	g := frame(c)
	if len(l.line) > 0 && (c.rot != l.rot || !sameLine(l.band, g) || len(l.line) >= maxLineGlyphs) {
		l.flush()
	}
	if len(l.line) == 0 {
		if isLayoutSpace(g.r) {
			return
		}
		l.rot, l.band = c.rot, [2]float32{g.y0, g.y1}
	}
	l.line = append(l.line, g)
}

// sameLine reports whether g sits on the line whose first glyph spans band:
// either's vertical middle lies within the other.
func sameLine(band [2]float32, g glyph) bool {
	mid := (g.y0 + g.y1) / 2
	bandMid := (band[0] + band[1]) / 2
	return (mid >= band[0] && mid <= band[1]) || (bandMid >= g.y0 && bandMid <= g.y1)
}

// full reports whether the text has reached max bytes.
func (l *pageLayout) full() bool { return l.b.Len() >= l.max }

// String ends the last line and returns the text.
func (l *pageLayout) String() string {
	l.flush()
	return l.b.String()
}

// flush writes the gathered line: glyphs in reading order, drawn-twice
// duplicates dropped, spaces at gaps, ligatures spelt out, right-to-left
// runs reversed.
func (l *pageLayout) flush() {
	if len(l.line) == 0 {
		return
	}
	line := l.line
	l.line = l.line[:0]
	slices.SortStableFunc(line, func(a, b glyph) int { return cmp.Compare(a.x0, b.x0) })
	width := meanWidth(line)
	rs := l.lineRune[:0]
	var prev *glyph
	for i := range line {
		g := &line[i]
		if prev != nil && isDuplicate(line[:i], g) {
			continue
		}
		if prev != nil {
			rs = appendGap(rs, g.start-prev.x1, max(prev.size, g.size), width)
		}
		if isLayoutSpace(g.r) {
			rs = append(rs, ' ')
		} else {
			rs = appendSpelt(rs, g.r)
		}
		prev = g
	}
	rs = reorderRTL(rs)
	l.lineRune = rs
	text := strings.TrimSpace(string(rs))
	if text == "" {
		return
	}
	if l.b.Len() > 0 {
		text = "\n" + text
	}
	if room := l.max - l.b.Len(); len(text) > room {
		if text = truncateUTF8(text, max(room, 0)); strings.TrimSpace(text) == "" {
			return
		}
	}
	l.b.WriteString(text)
}

// meanWidth is the mean width of the line's glyphs other than spaces, the
// width of a column's character for appendGap.
func meanWidth(line []glyph) float32 {
	var sum float32
	n := 0
	for _, g := range line {
		if !isLayoutSpace(g.r) {
			sum += g.x1 - g.x0
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float32(n)
}

// appendGap appends the spaces a gap between two glyphs of font size h makes:
// none for a gap within a word, one between words, and as many as the gap
// holds characters of the line's mean width when it is wider than
// columnGap of them: a table's columns stay apart, as pdftotext -layout
// keeps them (a table drawn in Courier keeps its alignment exactly).
func appendGap(rs []rune, gap, h, width float32) []rune {
	if gap <= wordGap*h {
		return rs
	}
	n := 1
	if width > 0 && gap > columnGap*width {
		n = int(math.Round(float64(gap / width)))
	}
	for range n {
		rs = append(rs, ' ')
	}
	return rs
}

// isDuplicate reports whether g repeats one of the dupWindow glyphs just
// before it in the sorted line: the same character at nearly the same
// place.
func isDuplicate(before []glyph, g *glyph) bool {
	w := g.x1 - g.x0
	for i := len(before) - 1; i >= max(0, len(before)-dupWindow) && before[i].x0 >= g.x0-w; i-- {
		p := before[i]
		if p.r == g.r && !isLayoutSpace(g.r) && absf(p.x0-g.x0) <= dupOverlap*w && absf(p.y0-g.y0) <= dupOverlap*(g.y1-g.y0) {
			return true
		}
	}
	return false
}

func absf(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// appendSpelt appends r, a Latin ligature as its letters (as poppler
// writes them), dropping what is no text: controls and non-characters.
func appendSpelt(rs []rune, r rune) []rune {
	switch r {
	case 0xfb00:
		return append(rs, 'f', 'f')
	case 0xfb01:
		return append(rs, 'f', 'i')
	case 0xfb02:
		return append(rs, 'f', 'l')
	case 0xfb03:
		return append(rs, 'f', 'f', 'i')
	case 0xfb04:
		return append(rs, 'f', 'f', 'l')
	case 0xfb05, 0xfb06:
		return append(rs, 's', 't')
	}
	if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == utf8.RuneError || r == 0xfffe || r == 0xffff || !utf8.ValidRune(r) {
		return rs
	}
	return append(rs, r)
}

// Directions of reorderRTL's runs.
const (
	dirNeutral = iota
	dirLTR
	dirRTL
)

// direction is r's strong direction: letters of Hebrew, Arabic and the
// like are right-to-left; other letters and digits left-to-right (digits
// read left to right inside right-to-left text too); the rest neutral.
func direction(r rune) int {
	p, _ := bidi.LookupRune(r)
	switch p.Class() {
	case bidi.R, bidi.AL:
		return dirRTL
	case bidi.L, bidi.EN, bidi.AN:
		return dirLTR
	}
	return dirNeutral
}

// reorderRTL puts a line drawn left to right back in reading order when it
// holds right-to-left script: each right-to-left run (with the neutrals
// between its letters) is reversed, and a line mostly right-to-left reads
// its runs from the right. A line without such script is returned as is.
func reorderRTL(rs []rune) []rune {
	dirs := make([]int, len(rs))
	rtl, ltr := 0, 0
	for i, r := range rs {
		dirs[i] = direction(r)
		switch dirs[i] {
		case dirRTL:
			rtl++
		case dirLTR:
			ltr++
		}
	}
	if rtl == 0 {
		return rs
	}
	base := dirLTR
	if rtl > ltr {
		base = dirRTL
	}
	// A neutral takes the direction of its strong neighbours when they
	// agree, else the line's.
	for i := 0; i < len(dirs); {
		if dirs[i] != dirNeutral {
			i++
			continue
		}
		j := i
		for j < len(dirs) && dirs[j] == dirNeutral {
			j++
		}
		d := base
		if i > 0 && j < len(dirs) && dirs[i-1] == dirs[j] {
			d = dirs[j]
		}
		for k := i; k < j; k++ {
			dirs[k] = d
		}
		i = j
	}
	type run struct{ from, to, dir int }
	var runs []run
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && dirs[j] == dirs[i] {
			j++
		}
		runs = append(runs, run{i, j, dirs[i]})
		i = j
	}
	if base == dirRTL {
		for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
			runs[i], runs[j] = runs[j], runs[i]
		}
	}
	out := make([]rune, 0, len(rs))
	for _, r := range runs {
		if r.dir == dirRTL {
			for k := r.to - 1; k >= r.from; k-- {
				out = append(out, rs[k])
			}
		} else {
			out = append(out, rs[r.from:r.to]...)
		}
	}
	return out
}
