package inspect

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkInspectJSON1MB is the summary of a 1 MB JSON array alone:
// line count, shape, first characters and 1 MiB of search parts.
func BenchmarkInspectJSON1MB(b *testing.B) {
	var items []string
	for i, n := 0, 0; n < 1_000_000; i++ {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":"item %d","tags":["a","b"],"note":"a note of some length for item %d"}`, i, i, i))
		n += len(items[i]) + 2
	}
	data := []byte("[" + strings.Join(items, ",\n") + "]")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, _, err := Inspect(context.Background(), bytes.NewReader(data), int64(len(data)), "application/json", Limits{})
		if err != nil || s.Length != len(items) || s.Partial != "" {
			b.Fatalf("%+v %v", s, err)
		}
	}
}

// BenchmarkPDF is what the PDF reader costs once it has started: the
// summary of the corpus' 100-page file (every page's text: 4,300
// characters a page, reported per page), a document opened on an
// instance of its own, one page's text as artifacts query --page reads it
// (the document opened afresh), and a page drawn at 1568 px and encoded.
func BenchmarkPDF(b *testing.B) {
	hundred, chromium := corpusFile(b, "hundred.pdf"), corpusFile(b, "chromium.pdf")
	if _, err := pdfReader.ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("summary100pages", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			s, parts, err := Inspect(context.Background(), bytes.NewReader(hundred), int64(len(hundred)), "application/pdf", Limits{Timeout: time.Minute})
			if err != nil || s.Pages != 100 || len(parts) != 100 {
				b.Fatalf("%+v %d %v", s, len(parts), err)
			}
		}
		// The process's CPU time says what a page costs on a loaded
		// machine better than the wall clock.
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/100, "ms/page")
		b.ReportMetric(float64((processCPU()-cpu).Microseconds())/1000/float64(b.N)/100, "cpu-ms/page")
	})
	b.Run("open", func(b *testing.B) { // an instance of its own, the document opened and counted
		for b.Loop() {
			d, err := openPDF(context.Background(), bytes.NewReader(chromium), int64(len(chromium)))
			if err != nil {
				b.Fatal(err)
			}
			if n, err := d.pages(); err != nil || n != 3 {
				b.Fatalf("%d %v", n, err)
			}
			d.close()
		}
	})
	b.Run("pageText", func(b *testing.B) {
		for b.Loop() {
			if text, _, err := PDFPageText(context.Background(), bytes.NewReader(hundred), int64(len(hundred)), 50); err != nil || len(text) < 4000 {
				b.Fatalf("%d %v", len(text), err)
			}
		}
	})
	b.Run("render1568", func(b *testing.B) {
		for b.Loop() {
			if p, err := RenderPDFPage(context.Background(), bytes.NewReader(chromium), int64(len(chromium)), 1, RenderOptions{}); err != nil || p.Height != 1568 {
				b.Fatalf("%+v %v", p.Height, err)
			}
		}
	})
}
