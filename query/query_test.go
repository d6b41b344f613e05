package query

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func put(t testing.TB, st store.Store, mime string, data []byte) store.Ref {
	t.Helper()
	ref, err := st.Put(context.Background(), bytes.NewReader(data), store.PutOptions{Namespace: "test", MIMEType: mime})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func numberedLines(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d says hello\n", i)
	}
	return b.Bytes()
}

// checkBudget asserts the answer fits its budget.
func checkBudget(t *testing.T, a Answer, max int) {
	t.Helper()
	if len(a.Text)+len(a.Cut) > max {
		t.Errorf("answer of %d+%d chars over the %d budget", len(a.Text), len(a.Cut), max)
	}
}

func TestRunGolden(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ctx := context.Background()
	text := put(t, st, "text/plain", numberedLines(2000))
	js := put(t, st, "application/json", []byte(`{"items":[{"name":"a","n":1},{"name":"b","n":2}],"total":2}`))
	bin := put(t, st, "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"))
	small := Budget{MaxChars: 400}
	cases := []struct {
		name string
		ref  store.Ref
		req  Request
		b    Budget
		want Answer
	}{
		{"lines", text, Request{Lines: &Range{2, 3}}, Budget{}, Answer{Text: "line 2 says hello\nline 3 says hello", Total: 2000}},
		{"lines to the end", text, Request{Lines: &Range{1999, 5000}}, Budget{}, Answer{Text: "line 1999 says hello\nline 2000 says hello", Total: 2000}},
		{"lines over budget", text, Request{Lines: &Range{10, 0}}, small, Answer{Text: strings.TrimSuffix(string(bytes.SplitAfterN(numberedLines(19), []byte("\n"), 10)[9]), "\n"), Total: 2000,
			Cut: "lines 10-19 of 2,000 shown; ask for lines 20-29"}},
		{"bytes text", text, Request{Bytes: &Range{0, 10}}, Budget{}, Answer{Text: "line 1 say", Total: text.SizeBytes,
			Cut: ""}},
		{"bytes binary", bin, Request{Bytes: &Range{0, 0}}, Budget{}, Answer{Text: "00000000: 8950 4e47 0d0a 1a0a 0000 000d 4948 4452  .PNG........IHDR\n00000010: 0000 0010                                ....\n", Total: 20}},
		{"grep", text, Request{Grep: `^line 1[0-2] `}, Budget{}, Answer{Text: "10:line 10 says hello\n11:line 11 says hello\n12:line 12 says hello", Total: 3}},
		{"grep literal", text, Request{Grep: `line 1999 `}, Budget{}, Answer{Text: "1999:line 1999 says hello", Total: 1}},
		{"grep context", text, Request{Grep: `line (5|7) `, Context: 1}, Budget{}, Answer{Text: "4-line 4 says hello\n5:line 5 says hello\n6-line 6 says hello\n7:line 7 says hello\n8-line 8 says hello", Total: 2}},
		{"grep context gap", text, Request{Grep: `line (5|9) `, Context: 1}, Budget{}, Answer{Text: "4-line 4 says hello\n5:line 5 says hello\n6-line 6 says hello\n--\n8-line 8 says hello\n9:line 9 says hello\n10-line 10 says hello", Total: 2}},
		{"grep none", text, Request{Grep: `goodbye`}, Budget{}, Answer{Cut: `no line matches "goodbye"`}},
		{"grep over budget", text, Request{Grep: `hello`}, small, Answer{Text: "1:line 1 says hello\n2:line 2 says hello\n3:line 3 says hello\n4:line 4 says hello\n5:line 5 says hello\n6:line 6 says hello\n7:line 7 says hello\n8:line 8 says hello\n9:line 9 says hello", Total: 2000,
			Cut: "9 of 2,000 matching lines shown (up to line 9); narrow the regex, or ask for lines 10- to read on"}},
		{"json", js, Request{JSON: "items.#.name"}, Budget{}, Answer{Text: `["a","b"]`, Total: 2}},
	}
	for _, c := range cases {
		a, err := Run(ctx, st, c.ref, c.req, c.b)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, a, c.want)
		}
		checkBudget(t, a, c.b.withDefaults().MaxChars)
	}
}

// TestRunLinesEdges: no final newline, empty lines, a single line.
func TestRunLinesEdges(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ref := put(t, st, "text/plain", []byte("a\n\nc"))
	for _, c := range []struct {
		rg   Range
		want string
	}{{Range{1, 0}, "a\n\nc"}, {Range{2, 2}, ""}, {Range{3, 3}, "c"}, {Range{2, 9}, "\nc"}} {
		a, err := Run(context.Background(), st, ref, Request{Lines: &c.rg}, Budget{})
		if err != nil || a.Text != c.want || a.Total != 3 || a.Cut != "" {
			t.Errorf("lines %v: %+v %v", c.rg, a, err)
		}
	}
	if _, err := Run(context.Background(), st, ref, Request{Lines: &Range{4, 4}}, Budget{}); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("line 4: %v", err)
	}
}

func TestRunBadInput(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ctx := context.Background()
	text := put(t, st, "text/plain", numberedLines(10))
	js := put(t, st, "application/json", []byte(`{"a":[1,2,3]}`))
	bin := put(t, st, "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	missing := store.Ref{ID: "test_0123456789ab", SizeBytes: 10}
	cases := []struct {
		name string
		ref  store.Ref
		req  Request
		want error
		msg  string
	}{
		{"no mode", text, Request{}, ErrBadRequest, "exactly one"},
		{"two modes", text, Request{Grep: "x", JSON: "a"}, ErrBadRequest, "exactly one"},
		{"unknown id", missing, Request{Lines: &Range{1, 2}}, store.ErrNotFound, ""},
		{"lines past the end", text, Request{Lines: &Range{11, 20}}, ErrOutOfRange, "has 10 lines"},
		{"lines backwards", text, Request{Lines: &Range{5, 2}}, ErrBadRequest, ""},
		{"bytes past the end", text, Request{Bytes: &Range{5000, 0}}, ErrOutOfRange, "bytes"},
		{"invalid regex", text, Request{Grep: "a("}, ErrBadRegex, "missing closing )"},
		{"grep binary", bin, Request{Grep: "PNG"}, ErrNotText, "bytes A-B for a hex dump"},
		{"lines binary", bin, Request{Lines: &Range{1, 2}}, ErrNotText, ""},
		{"json path missing", js, Request{JSON: "b"}, ErrOutOfRange, `top-level keys are ["a"]`},
		{"json not json", text, Request{JSON: "a"}, ErrBadRequest, "not JSON"},
		{"page not pdf", text, Request{Page: 1}, ErrBadRequest, "not a PDF"},
		{"entry not archive", text, Request{Entry: "a"}, ErrBadRequest, "not an archive"},
	}
	for _, c := range cases {
		_, err := Run(ctx, st, c.ref, c.req, Budget{})
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("%s: got %v, want %v with %q", c.name, err, c.want, c.msg)
		}
	}
}

func TestRunEntryAndPage(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ctx := context.Background()
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for _, f := range [][2]string{{"docs/a.txt", "alpha\nbeta\n"}, {"img/c.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"}, {"big.txt", strings.Repeat("word ", 100)}} {
		w, _ := zw.Create(f[0])
		w.Write([]byte(f[1]))
	}
	zw.Close()
	arc := put(t, st, "application/zip", zb.Bytes())

	a, err := Run(ctx, st, arc, Request{Entry: "docs/a.txt"}, Budget{})
	if err != nil || a.Text != "alpha\nbeta\n" || a.Stored != nil {
		t.Errorf("text entry: %+v %v", a, err)
	}
	a, err = Run(ctx, st, arc, Request{Entry: "img/c.png"}, Budget{})
	if err != nil || a.Stored == nil || a.Stored.MIMEType != "image/png" || !strings.Contains(a.Text, a.Stored.ID) || a.Stored.Filename != "c.png" {
		t.Fatalf("binary entry: %+v %v", a, err)
	}
	rc, _, err := st.Get(ctx, a.Stored.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	a, err = Run(ctx, st, arc, Request{Entry: "big.txt"}, Budget{MaxChars: 100})
	if err != nil || a.Stored == nil || !strings.HasPrefix(a.Text, "word word") || !strings.Contains(a.Cut, a.Stored.ID) {
		t.Errorf("long text entry: %+v %v", a, err)
	}
	checkBudget(t, a, MinMaxChars)
	if _, err := Run(ctx, st, arc, Request{Entry: "nope"}, Budget{}); !errors.Is(err, ErrOutOfRange) || !strings.Contains(err.Error(), "docs/a.txt") {
		t.Errorf("missing entry: %v", err)
	}

	pdf := put(t, st, "application/pdf", buildPDF([][]string{{"First page text."}, {"Second page."}}))
	a, err = Run(ctx, st, pdf, Request{Page: 1}, Budget{})
	if err != nil || a.Text != "First page text." || a.Total != 2 || a.Cut != "page 1 of 2 shown; ask for page 2" {
		t.Errorf("page 1: %+v %v", a, err)
	}
	if _, err := Run(ctx, st, pdf, Request{Page: 3}, Budget{}); !errors.Is(err, ErrOutOfRange) || !strings.Contains(err.Error(), "has 2 pages") {
		t.Errorf("page 3: %v", err)
	}
	if a, err := Run(ctx, st, pdf, Request{Grep: "Second"}, Budget{}); err != nil || a.Text != "page 2, line 1:Second page." {
		t.Errorf("grep pdf: %+v %v", a, err)
	}
}

// TestRunLongLine: a line over the budget is shown cut, with the bytes to
// ask for next.
func TestRunLongLine(t *testing.T) {
	st := memstore.New(memstore.Config{})
	long := put(t, st, "text/plain", []byte("short\n"+strings.Repeat("x", 5000)+"\nend\n"))
	a, err := Run(context.Background(), st, long, Request{Lines: &Range{2, 2}}, Budget{MaxChars: 1000})
	if err != nil || len(a.Text) != 700 || a.Cut != "line 2 is longer than the budget: its first 700 bytes shown; ask for bytes 706-1406" || a.Total != 3 {
		t.Errorf("%+v %v", a, err)
	}
	a, err = Run(context.Background(), st, long, Request{Grep: "end"}, Budget{})
	if err != nil || a.Text != "3:end" {
		t.Errorf("grep after a long line: %+v %v", a, err)
	}
}

// buildPDF is a minimal PDF of the given pages in Helvetica.
func buildPDF(pages [][]string) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	var kids []string
	for i := range pages {
		kids = append(kids, fmt.Sprintf("%d 0 R", 4+2*i))
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i, lines := range pages {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		var cs strings.Builder
		for j, l := range lines {
			fmt.Fprintf(&cs, "BT /F1 12 Tf 72 %d Td (%s) Tj ET\n", 720-14*j, l)
		}
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", cs.Len(), cs.String()))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}
