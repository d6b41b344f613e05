package inspect

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// buildPDF writes a PDF of the given pages, each line shown with Tj in
// standard Type1 Helvetica, with an Info dictionary: known text to check
// the extractor against.
func buildPDF(title, author string, pages [][]string) []byte {
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, 4 info, then page i: 5+2i, content 6+2i.
	var kids []string
	for i := range n {
		kids = append(kids, fmt.Sprintf("%d 0 R", 5+2*i))
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %-10d >>", strings.Join(kids, " "), n),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		fmt.Sprintf("<< /Title (%s) /Author (%s) >>", title, author),
	}
	for i, lines := range pages {
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 6+2*i))
		var cs strings.Builder
		for j, l := range lines {
			if raw, ok := strings.CutPrefix(l, "RAW:"); ok {
				cs.WriteString(raw + "\n")
				continue
			}
			fmt.Fprintf(&cs, "BT /F1 12 Tf 72 %d Td (%s) Tj ET\n", 720-14*j, l)
		}
		objs = append(objs, fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", cs.Len(), cs.String()))
	}
	return writePDF(" /Info 4 0 R", objs...)
}

// writePDF writes objects 1 to n, their bodies as given (streams
// included), a cross-reference table and a trailer whose Root is object 1,
// with the trailer entries given.
func writePDF(trailer string, objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, body := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, body)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailer, xref)
	return b.Bytes()
}

var knownPages = [][]string{
	{"Quarterly revenue grew 12 percent.", "Costs fell."},
	{"Page two talks about hiring."},
	{"The third page ends the report."},
}

func TestInspectPDFKnownText(t *testing.T) {
	data := buildPDF("Q3 Report", "Ada Lovelace", knownPages)
	s, parts, err := inspectPDF(context.Background(), bytes.NewReader(data), int64(len(data)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Kind: "pdf", Format: "pdf", Pages: 3, Title: "Q3 Report", Author: "Ada Lovelace",
		Text: "Quarterly revenue grew 12 percent. Costs fell. Page two talks about hiring. The third page ends the report."}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("summary\n got %+v\nwant %+v", s, want)
	}
	wantParts := []TextPart{
		{"page 1", "Quarterly revenue grew 12 percent.\nCosts fell."},
		{"page 2", "Page two talks about hiring."},
		{"page 3", "The third page ends the report."},
	}
	if fmt.Sprint(parts) != fmt.Sprint(wantParts) {
		t.Errorf("parts\n got %q\nwant %q", parts, wantParts)
	}
	for i, p := range knownPages {
		text, n, err := PDFPageText(context.Background(), bytes.NewReader(data), int64(len(data)), i+1)
		if err != nil || n != 3 || text != strings.Join(p, "\n") {
			t.Errorf("page %d: %q %d %v", i+1, text, n, err)
		}
	}
	if _, n, err := PDFPageText(context.Background(), bytes.NewReader(data), int64(len(data)), 4); !errors.Is(err, ErrNoPage) || n != 3 {
		t.Errorf("page 4: %d %v, want ErrNoPage and 3 pages", n, err)
	}
}

// TestPDFTextLayout: moves within one text object become spaces and line
// breaks, as do wide TJ gaps; narrow kerning does not split a word.
func TestPDFTextLayout(t *testing.T) {
	data := buildPDF("T", "A", [][]string{{"RAW:BT /F1 12 Tf 14 TL 72 720 Td (Hello) Tj 40 0 Td (world) Tj 0 -14 Td (Next line) Tj T* [(Ker) -30 (ning) -500 (gap)] TJ ET"}})
	text, _, err := PDFPageText(context.Background(), bytes.NewReader(data), int64(len(data)), 1)
	if want := "Hello world\nNext line\nKerning gap"; err != nil || text != want {
		t.Errorf("got %q, %v; want %q", text, err, want)
	}
}

func TestInspectPDFTextCap(t *testing.T) {
	data := buildPDF("T", "A", knownPages)
	s, parts, err := inspectPDF(context.Background(), bytes.NewReader(data), int64(len(data)), Limits{MaxTextBytes: 40})
	if err != nil {
		t.Fatal(err)
	}
	if s.Partial != "text" || len(parts) != 1 || parts[0].Text != "Quarterly revenue grew 12 percent.\nCosts" {
		t.Errorf("partial %q parts %q", s.Partial, parts)
	}
}

// TestInspectPDFMalformed feeds broken PDFs: each returns an error or a
// summary within the time cap, never a panic or a hang.
func TestInspectPDFMalformed(t *testing.T) {
	good := buildPDF("T", "A", knownPages)
	// The reader's one-time start is not the documents' time.
	if _, err := pdfReader.ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Edits keep every length so the xref offsets stay right.
	edit := func(old, new string) []byte {
		if len(old) != len(new) || !bytes.Contains(good, []byte(old)) {
			t.Fatalf("bad edit %q", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	cyclic := edit("/Kids [5 0 R 7 0 R 9 0 R]", "/Kids [2 0 R 2 0 R 2 0 R]")
	cases := map[string][]byte{
		"empty":        {},
		"garbage":      bytes.Repeat([]byte("not a pdf "), 1000),
		"truncated":    good[:len(good)/2],
		"bad xref":     edit("xref\n0", "xref\nZ"),
		"bad length":   edit(string(good[bytes.Index(good, []byte("/Length ")):][:10]), "/Length 99"),
		"bad object":   edit("6 0 obj", "6 0 obx"),
		"cyclic pages": cyclic,
		"huge count":   edit("/Count 3         ", "/Count 999999999 "),
		"bad tj":       edit("(Costs fell.) Tj", "Tj Tj Tj Tj Tj T"),
	}
	lim := Limits{Timeout: 100 * time.Millisecond}
	for name, data := range cases {
		slack := loadSlack(t, good, 200*time.Millisecond)
		start := time.Now()
		s, _, err := inspectPDF(context.Background(), bytes.NewReader(data), int64(len(data)), lim)
		if d := time.Since(start); d > lim.Timeout+abandonGrace+slack {
			t.Errorf("%s: took %v, over the cap %v, the grace %v and the machine's slack now %v", name, d, lim.Timeout, abandonGrace, slack)
		}
		t.Logf("%s: %+v %v", name, s, err)
		if err == nil && s.Kind != "pdf" {
			t.Errorf("%s: no error and kind %q", name, s.Kind)
		}
		// PDFium finds the cycle: the count and Info stay, no page is read.
		if name == "cyclic pages" && (err != nil || s.Pages != 3 || s.Title != "T" || s.Text != "") {
			t.Errorf("cyclic pages: want the Info and no text, got %+v %v", s, err)
		}
		if name == "bad tj" && (err != nil || !strings.HasPrefix(s.Text, "Quarterly revenue grew 12 percent. Page two")) {
			t.Errorf("bad tj: want the text around the bad operator, got %+v %v", s, err)
		}
	}
	// The cyclic page tree is stopped by the deadline, not a hang.
	_, _, err := PDFPageText(context.Background(), bytes.NewReader(cyclic), int64(len(cyclic)), 2)
	if err == nil {
		t.Error("cyclic page tree: no error")
	}
}

// TestInspectPDFShipped reads the example PDF the repo ships.
func TestInspectPDFShipped(t *testing.T) {
	data, err := os.ReadFile("../examples/tableau-server/sales_dashboard.pdf")
	if err != nil {
		t.Skip(err)
	}
	s, parts, err := inspectPDF(context.Background(), bytes.NewReader(data), int64(len(data)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Pages != 1 || s.Title != "Sales Dashboard" || len(parts) != 1 ||
		!strings.HasPrefix(parts[0].Text, "Sales Dashboard - FY2025\nRegion        Q1") ||
		!strings.HasSuffix(parts[0].Text, "Generated by Tableau Server for workbook wb-7f3a. Totals in USD.") ||
		!strings.HasPrefix(s.Text, "Sales Dashboard - FY2025 Region Q1 Q2 Q3 Q4 North 17,919") {
		t.Errorf("%+v %q", s, parts)
	}
}

// pagePDF is a one-page PDF whose content stream is stream, with the
// given filter ("" for none), in Helvetica as F1.
func pagePDF(stream []byte, filter string) []byte {
	f := ""
	if filter != "" {
		f = " /Filter /" + filter
	}
	return writePDF("",
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(stream), f, stream))
}

// deflateBomb is a zlib stream that inflates to n times 64 KiB of chunk
// repeated, made without compressing it all: once the window holds the
// pattern, every flushed 64 KiB compresses to the same bytes, which are
// repeated. It ends without a checksum, as truncated streams do.
func deflateBomb(t testing.TB, chunk string, n int) []byte {
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	block := bytes.Repeat([]byte(chunk), (64<<10)/len(chunk))
	var outs [][]byte
	for range 3 {
		at := b.Len()
		w.Write(block)
		w.Flush()
		outs = append(outs, bytes.Clone(b.Bytes()[at:]))
	}
	if !bytes.Equal(outs[1], outs[2]) {
		t.Fatal("deflateBomb: the flushed blocks differ")
	}
	z := []byte{0x78, 0xda}
	z = append(z, outs[0]...)
	for range n - 1 {
		z = append(z, outs[1]...)
	}
	return z
}

// TestInspectPDFBombs: a content stream that inflates to twice the
// reader's memory limit is stopped by the limit, well before a long time
// cap, and one that takes far longer to draw than a short time cap is
// stopped by the cap (with the grace a parser gets); either summary keeps
// the page count; neither puts the document on the Go heap (the
// instance's memory is a mapping); and the reader still reads the next
// document.
func TestInspectPDFBombs(t *testing.T) {
	good := buildPDF("T", "A", knownPages)
	// The reader's one-time start is not the documents' time.
	if _, err := pdfReader.ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		data    []byte
		timeout time.Duration
		partial string
	}{
		// Partial "" says the memory limit stopped it, not the time cap.
		{"inflates past the memory limit", pagePDF(deflateBomb(t, "q Q ", 2*PDFMemoryLimit/(64<<10)), "FlateDecode"), time.Minute, ""},
		{"draws for longer than the time cap", pagePDF(deflateBomb(t, "BT /F1 12 Tf 72 720 Td (slow) Tj ET\n", 2000), "FlateDecode"), 300 * time.Millisecond, "time"},
	} {
		within := c.timeout + abandonGrace + loadSlack(t, good, time.Second)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		s, _, err := Inspect(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), "application/pdf", Limits{Timeout: c.timeout})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		t.Logf("%s (%d bytes): %+v %v in %v, %d MiB allocated on the heap", c.name, len(c.data), s, err, took, (after.TotalAlloc-before.TotalAlloc)>>20)
		if err != nil || s.Kind != "pdf" || s.Pages != 1 || s.Text != "" || s.Partial != c.partial {
			t.Errorf("%s: %+v %v; want the page count, no text, partial %q", c.name, s, err, c.partial)
		}
		if took > within {
			t.Errorf("%s: took %v, over %v", c.name, took, within)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s: %d MiB allocated on the Go heap", c.name, grew>>20)
		}
		if s, _, err := Inspect(context.Background(), bytes.NewReader(good), int64(len(good)), "application/pdf", Limits{}); err != nil || s.Pages != 3 || s.Text == "" {
			t.Errorf("after %s: %+v %v", c.name, s, err)
		}
	}
}

// loadSlack is how long past its caps and grace a document may take on
// this machine now: ten times what reading the good PDF takes, measured
// here and now, so that a loaded machine (or the race detector) gets as
// much more as it needs, and at least floor.
func loadSlack(t *testing.T, good []byte, floor time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if s, _, err := inspectPDF(context.Background(), bytes.NewReader(good), int64(len(good)), Limits{}); err != nil || s.Pages != 3 {
		t.Fatalf("the good PDF: %+v %v", s, err)
	}
	return max(floor, 10*time.Since(start))
}

// TestMayBePDF: bytes that only start like a PDF (a blob whose magic bytes
// a detector went by) are refused before the reader starts, with what was
// looked at; a PDF whose objects follow a long prefix of junk, or whose
// only object keywords are at its end, is not.
func TestMayBePDF(t *testing.T) {
	blob := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte{0xa5, 0x5a, 0x00, 0xff}, 100_000)...)
	err := mayBePDF(bytes.NewReader(blob), int64(len(blob)))
	if !errors.Is(err, ErrNotPDF) || err.Error() != "inspect: not a readable PDF: no object in its first and last 64 kB" {
		t.Errorf("blob: %v", err)
	}
	if s, _, err := Inspect(context.Background(), bytes.NewReader(blob), int64(len(blob)), "application/pdf", Limits{}); err != nil || s.Kind != "pdf" || s.Pages != 0 {
		t.Errorf("blob's summary: %+v %v", s, err)
	}
	good := buildPDF("T", "A", knownPages)
	junk := bytes.Repeat([]byte("% junk\n"), 20_000) // 140 kB
	for name, data := range map[string][]byte{
		"objects after junk": append(append([]byte("%PDF-1.4\n"), junk...), good...),
		"a short PDF":        good,
	} {
		if err := mayBePDF(bytes.NewReader(data), int64(len(data))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestStartPDFReaderOutlastsDeadline: the reader's start is waited for
// past the caller's deadline (a query's budget is the document's, the
// start the machine's), and the reader reads afterwards.
func TestStartPDFReaderOutlastsDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if err := StartPDFReader(ctx); err != nil {
		t.Fatalf("StartPDFReader past its deadline: %v, want the reader started", err)
	}
	pdf := buildPDF("t", "a", [][]string{{"started once"}})
	text, _, err := PDFPageText(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), 1)
	if err != nil || !strings.Contains(text, "started once") {
		t.Fatalf("page 1 after the start: %q, %v", text, err)
	}
}
