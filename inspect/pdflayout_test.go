package inspect

import (
	"math"
	"testing"
	"time"
)

// run lays out chars drawn one after another from x along a baseline at y:
// each rune of s is w wide; a space in s is a gap of w with no glyph, "_"
// a space glyph the document has.
func run(x, y, w, size float32, s string) []pdfChar {
	var cs []pdfChar
	for _, r := range s {
		switch r {
		case ' ':
		case '_':
			cs = append(cs, pdfChar{r: ' ', left: x, right: x + w, bottom: y - 0.2*size, top: y + 0.9*size, x: x, y: y, size: size})
		default:
			cs = append(cs, pdfChar{r: r, left: x, right: x + w, bottom: y - 0.2*size, top: y + 0.9*size, x: x, y: y, size: size})
		}
		x += w
	}
	return cs
}

func layout(chars ...[]pdfChar) string {
	l := pageLayout{max: 1 << 20}
	for _, cs := range chars {
		for _, c := range cs {
			l.add(c)
		}
	}
	return l.String()
}

// TestPDFLayout: words and lines as poppler joins them, from glyph boxes
// alone.
func TestPDFLayout(t *testing.T) {
	rtl := func(x float32, s string) []pdfChar { // s in reading order, drawn right to left as a shaper places it
		rs := []rune(s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return run(x, 700, 5, 10, string(rs))
	}
	// the ligature ﬄ as a PDF without ToUnicode gives it, one glyph
	shuffle := append(append(run(72, 700, 5, 10, "shu"), pdfChar{r: 0xfb04, left: 87, right: 99, bottom: 698, top: 709, x: 87, y: 700, size: 10}), run(99, 700, 5, 10, "e")...)
	// PDFium's pieces of a ligature: tight boxes inside the glyph's
	// advance, all with the glyph's origin
	pieces := append(run(72, 700, 5, 10, "o"), pdfChar{r: 'f', left: 77.5, right: 80, bottom: 700, top: 708, x: 77, y: 700, size: 10},
		pdfChar{r: 'f', left: 80, right: 82.5, bottom: 700, top: 708, x: 77, y: 700, size: 10},
		pdfChar{r: 'i', left: 82.5, right: 85, bottom: 700, top: 708, x: 77, y: 700, size: 10})
	pieces = append(pieces, run(86, 700, 5, 10, "ce")...)
	// "Up" drawn upwards (rotated a quarter turn): each glyph's box is
	// above the one before
	up := []pdfChar{
		{r: 'U', left: 100, right: 110, bottom: 100, top: 106, x: 108, y: 100, size: 10, rot: 1},
		{r: 'p', left: 100, right: 110, bottom: 106, top: 112, x: 108, y: 106, size: 10, rot: 1},
	}
	cases := []struct {
		name  string
		chars [][]pdfChar
		want  string
	}{
		{"a gap over a tenth of the font size is a space", [][]pdfChar{run(72, 700, 5, 10, "two words")}, "two words"},
		{"kerning is no space", [][]pdfChar{run(72, 700, 5, 10, "Ker"), run(86.5, 700, 5, 10, "ning")}, "Kerning"},
		{"a space glyph is kept", [][]pdfChar{run(72, 700, 5, 10, "a_b")}, "a b"},
		{"a lower baseline is a new line", [][]pdfChar{run(72, 700, 5, 10, "one"), run(72, 686, 5, 10, "two")}, "one\ntwo"},
		{"a superscript stays on its line", [][]pdfChar{run(72, 700, 5, 10, "E=mc"), run(92, 703, 3, 6, "2")}, "E=mc2"},
		{"a line drawn out of order is read left to right", [][]pdfChar{run(100, 700, 5, 10, "world"), run(72, 700, 5, 10, "hello")}, "hello world"},
		{"text drawn twice to look bold is read once", [][]pdfChar{run(72, 700, 5, 10, "Bold"), run(72.3, 700, 5, 10, "Bold")}, "Bold"},
		{"a ligature glyph is spelt out", [][]pdfChar{shuffle}, "shuffle"},
		{"a ligature's pieces stay in their word", [][]pdfChar{pieces}, "office"},
		{"a table's columns keep their distance", [][]pdfChar{run(72, 700, 6, 10, "Region_    Q1")}, "Region     Q1"},
		{"right-to-left words in reading order", [][]pdfChar{rtl(300, "مرحبا بالعالم")}, "مرحبا بالعالم"},
		{"a right-to-left word inside a left-to-right line", [][]pdfChar{run(72, 700, 5, 10, "say "), rtl(97, "سلام"), run(122, 700, 5, 10, " now")}, "say سلام now"},
		{"digits read left to right inside right-to-left text", [][]pdfChar{rtl(300, "عام"), run(320, 700, 5, 10, " 2025 "), rtl(350, "في")}, "في 2025 عام"},
		{"text drawn upwards is one line", [][]pdfChar{up}, "Up"},
		{"controls and non-characters are dropped", [][]pdfChar{run(72, 700, 5, 10, "a\x01b\ufffe")}, "ab"},
	}
	for _, c := range cases {
		if got := layout(c.chars...); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestPDFLayoutCap: the text stops at max bytes, whole characters only.
func TestPDFLayoutCap(t *testing.T) {
	l := pageLayout{max: 10}
	for _, c := range append(run(72, 700, 5, 10, "first line"), run(72, 686, 5, 10, "ünder")...) {
		if l.full() {
			break
		}
		l.add(c)
	}
	if got := l.String(); got != "first line" {
		t.Errorf("got %q", got)
	}
	l = pageLayout{max: 12}
	for _, c := range append(run(72, 700, 5, 10, "first line"), run(72, 686, 5, 10, "ünder")...) {
		l.add(c)
	}
	if got := l.String(); got != "first line" {
		t.Errorf("a cut inside ü: got %q", got)
	}
}

// TestQuarterTurns: PDFium measures a character's angle clockwise.
func TestQuarterTurns(t *testing.T) {
	for _, c := range []struct {
		angle float32
		want  uint8
	}{{0, 0}, {-1, 0}, {3 * math.Pi / 2, 1}, {math.Pi, 2}, {math.Pi / 2, 3}, {2*math.Pi - 0.01, 0}, {0.1, 0}} {
		if got := quarterTurns(c.angle); got != c.want {
			t.Errorf("quarterTurns(%v) = %d, want %d", c.angle, got, c.want)
		}
	}
}

// TestPDFLayoutHostileLine: 100,000 different glyphs drawn at one spot cost
// about what 100,000 glyphs along lines cost, not a look back over the
// whole pile for each (measured against each other, so a loaded machine
// slows both).
func TestPDFLayoutHostileLine(t *testing.T) {
	const n = 100_000
	timed := func(at func(i int) (x, y float32)) time.Duration {
		l := pageLayout{max: 1 << 20}
		start := time.Now()
		for i := range n {
			x, y := at(i)
			l.add(pdfChar{r: rune(0x4e00 + i%5000), left: x, right: x + 5, bottom: y, top: y + 10, x: x, y: y, size: 10})
		}
		_ = l.String()
		return time.Since(start)
	}
	lines := timed(func(i int) (float32, float32) { return float32(72 + 5*(i%100)), float32(700 - 12*(i/100)) })
	pile := timed(func(int) (float32, float32) { return 72, 700 })
	if pile > 5*lines+100*time.Millisecond {
		t.Errorf("%d glyphs at one spot took %v, along lines %v", n, pile, lines)
	}
}
