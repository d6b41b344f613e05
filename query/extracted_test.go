package query

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestRunGrepAndLinesOnPDF: grep and lines read a PDF's extracted text,
// each line named by its page and its line on the page (as
// artifacts_search names them), instead of refusing the PDF as not text.
func TestRunGrepAndLinesOnPDF(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ctx := context.Background()
	pdf := put(t, st, "application/pdf", buildPDF([][]string{
		{"Quarterly report", "Revenue grew 12%", "Costs were flat"},
		{"Outlook", "Revenue in Q4 doubles"},
	}))
	mem := membudget.New(1 << 30)
	for _, c := range []struct {
		name string
		req  Request
		b    Budget
		want Answer
	}{
		{"grep", Request{Grep: "Revenue"}, Budget{}, Answer{Text: "page 1, line 2:Revenue grew 12%\npage 2, line 2:Revenue in Q4 doubles", Total: 2}},
		{"grep context", Request{Grep: "grew", Context: 1}, Budget{}, Answer{Text: "page 1, line 1-Quarterly report\npage 1, line 2:Revenue grew 12%\npage 1, line 3-Costs were flat", Total: 1}},
		{"grep context stays on its page", Request{Grep: "Outlook", Context: 2}, Budget{}, Answer{Text: "page 2, line 1:Outlook\npage 2, line 2-Revenue in Q4 doubles", Total: 1}},
		{"grep none", Request{Grep: "loss"}, Budget{}, Answer{Cut: `no line of the PDF's text matches "loss"`}},
		{"lines", Request{Lines: &Range{2, 4}}, Budget{}, Answer{Text: "page 1, line 2:Revenue grew 12%\npage 1, line 3:Costs were flat\npage 2, line 1:Outlook", Total: 5}},
		{"lines all", Request{Lines: &Range{1, 0}}, Budget{Memory: mem}, Answer{Text: "page 1, line 1:Quarterly report\npage 1, line 2:Revenue grew 12%\npage 1, line 3:Costs were flat\npage 2, line 1:Outlook\npage 2, line 2:Revenue in Q4 doubles", Total: 5}},
	} {
		a, err := Run(ctx, st, pdf, c.req, c.b)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, a, c.want)
		}
	}
	if _, err := Run(ctx, st, pdf, Request{Lines: &Range{6, 7}}, Budget{}); !errors.Is(err, ErrOutOfRange) || !strings.Contains(err.Error(), "5 lines of text") {
		t.Errorf("lines past the end: %v", err)
	}
	// An answer over its budget says where it stopped and what to ask next.
	var many []string
	for i := 1; i <= 30; i++ {
		many = append(many, fmt.Sprintf("Row %02d of the ledger", i))
	}
	long := put(t, st, "application/pdf", buildPDF([][]string{many[:15], many[15:]}))
	a, err := Run(ctx, st, long, Request{Lines: &Range{2, 0}}, Budget{MaxChars: 400})
	want := Answer{Text: "page 1, line 2:Row 02 of the ledger\npage 1, line 3:Row 03 of the ledger\npage 1, line 4:Row 04 of the ledger\npage 1, line 5:Row 05 of the ledger\npage 1, line 6:Row 06 of the ledger", Total: 30,
		Cut: "lines 2-6 of the PDF's 30 lines of text shown (to page 1, line 6); ask for lines 7-11"}
	if err != nil || fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", want) {
		t.Errorf("lines over budget: %v\n got %+v\nwant %+v", err, a, want)
	}
	a, err = Run(ctx, st, long, Request{Grep: "Row"}, Budget{MaxChars: 400})
	want = Answer{Text: "page 1, line 1:Row 01 of the ledger\npage 1, line 2:Row 02 of the ledger\npage 1, line 3:Row 03 of the ledger\npage 1, line 4:Row 04 of the ledger\npage 1, line 5:Row 05 of the ledger", Total: 30,
		Cut: "5 of 30 matching lines shown (up to page 1, line 5); narrow the regex, or ask for page 1 to read on"}
	if err != nil || fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", want) {
		t.Errorf("grep over budget: %v\n got %+v\nwant %+v", err, a, want)
	}
	// What the extraction held was reserved and given back.
	if mem.Peak() == 0 || mem.InUse() != 0 {
		t.Errorf("budget peak %d, in use %d", mem.Peak(), mem.InUse())
	}
}

// TestRunGrepOnOfficeDocument: a DOCX's text is grepped as a PDF's is,
// each hit named by its entry; an archive with no document text is still
// refused with the mode to use.
func TestRunGrepOnOfficeDocument(t *testing.T) {
	st := memstore.New(memstore.Config{})
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("word/document.xml")
	w.Write([]byte(`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Contract terms</w:t></w:r></w:p><w:p><w:r><w:t>Payment within 30 days</w:t></w:r></w:p></w:body></w:document>`))
	zw.Close()
	docx := put(t, st, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", zb.Bytes())
	a, err := Run(context.Background(), st, docx, Request{Grep: "Payment"}, Budget{})
	if err != nil || a.Text != "entry word/document.xml, line 2:Payment within 30 days" || a.Total != 1 {
		t.Errorf("grep docx: %+v %v", a, err)
	}
	zb.Reset()
	zw = zip.NewWriter(&zb)
	w, _ = zw.Create("a.txt")
	w.Write([]byte("alpha"))
	zw.Close()
	arc := put(t, st, "application/zip", zb.Bytes())
	if _, err := Run(context.Background(), st, arc, Request{Grep: "alpha"}, Budget{}); !errors.Is(err, ErrNotText) || !strings.Contains(err.Error(), "entry NAME") {
		t.Errorf("grep zip: %v", err)
	}
}
