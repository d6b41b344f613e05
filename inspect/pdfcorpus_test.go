package inspect

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/internal/pdfcorpus"
)

// The PDF corpus (testdata/pdf, made by scripts/pdf-corpus.sh with
// Chromium, Ghostscript and qpdf) and poppler's reading of each file, the
// reference the reader is held to; internal/pdfcorpus says what "the same
// text" means.

const corpusDir = "testdata/pdf"

func readCorpus(t testing.TB) []pdfcorpus.Entry {
	t.Helper()
	c, err := pdfcorpus.Read(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) < 10 {
		t.Fatalf("corpus.json lists %d files", len(c))
	}
	return c
}

// corpusFile is the bytes of the corpus' file name.
func corpusFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reference is poppler's text of e, one string per page.
func reference(t testing.TB, e pdfcorpus.Entry) []string {
	t.Helper()
	pages, err := pdfcorpus.Pages(corpusDir, e)
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// startsWith reports whether head, a summary's words whose last may be
// cut short, are the first of all; no words only when all has none.
func startsWith(head, all []string) bool {
	if len(head) == 0 || len(head) > len(all) {
		return len(head) == len(all)
	}
	n := len(head) - 1
	return slices.Equal(head[:n], all[:n]) && strings.HasPrefix(all[n], head[n])
}

// corpusLimits lets a summary read the whole of every corpus file on a
// loaded machine: the time cap is TestPDFDeadline's subject.
var corpusLimits = Limits{Timeout: time.Minute}

// TestPDFCorpus: for every file of the corpus the summary has pdfinfo's
// page count and title, every page's text has poppler's words in
// poppler's order (as a search part, and as PDFPageText answers a page),
// the summary starts with the first of them, and the pages poppler finds
// no text on are the summary's NoText.
func TestPDFCorpus(t *testing.T) {
	for _, e := range readCorpus(t) {
		t.Run(e.File, func(t *testing.T) {
			data := corpusFile(t, e.File)
			ref := reference(t, e)
			if len(ref) != e.Pages {
				t.Fatalf("the reference has %d pages, pdfinfo %d", len(ref), e.Pages)
			}
			s, parts, err := Inspect(context.Background(), bytes.NewReader(data), int64(len(data)), "application/pdf", corpusLimits)
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind != "pdf" || s.Pages != e.Pages || s.Title != e.Title || s.Partial != "" {
				t.Errorf("summary %+v; want %d pages, title %q", s, e.Pages, e.Title)
			}
			byPlace := map[string]string{}
			for _, p := range parts {
				byPlace[p.Place] = p.Text
			}
			var all, noText []string
			for i, want := range ref {
				page := i + 1
				got := byPlace[fmt.Sprintf("page %d", page)]
				if w, g := pdfcorpus.Words(want), pdfcorpus.Words(got); !slices.Equal(g, w) {
					t.Errorf("page %d's words\n got %q\nwant %q", page, g, w)
				}
				if len(pdfcorpus.Words(want)) == 0 {
					noText = append(noText, strconv.Itoa(page))
				}
				all = append(all, pdfcorpus.Words(want)...)
				text, n, err := PDFPageText(context.Background(), bytes.NewReader(data), int64(len(data)), page)
				if err != nil || n != e.Pages || !slices.Equal(pdfcorpus.Words(text), pdfcorpus.Words(want)) {
					t.Errorf("PDFPageText(%d) = %q, %d, %v; want poppler's words, %d pages", page, text, n, err, e.Pages)
				}
			}
			if !startsWith(pdfcorpus.Words(s.Text), all) {
				t.Errorf("summary text %q does not start with the document's words %q", s.Text, all[:min(len(all), 10)])
			}
			var summaryNoText []string
			for _, p := range s.NoText {
				summaryNoText = append(summaryNoText, strconv.Itoa(p))
			}
			wantNoText := make([]string, 0, len(e.NoText))
			for _, p := range e.NoText {
				wantNoText = append(wantNoText, strconv.Itoa(p))
			}
			if !slices.Equal(summaryNoText, noText) || !slices.Equal(noText, wantNoText) || s.NoTextPages != len(noText) {
				t.Errorf("pages without text: summary %v (%d), poppler %v, corpus.json %v", summaryNoText, s.NoTextPages, noText, wantNoText)
			}
		})
	}
}

// TestPDFCorpusReferences: the committed references are what the
// installed poppler reads now (pdftotext -layout, pdfinfo's page count
// and title). Without poppler it skips, except under CI=true, where
// scripts/test.sh has installed it (scripts/pdf-tools.sh).
func TestPDFCorpusReferences(t *testing.T) {
	for _, tool := range []string{"pdftotext", "pdfinfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed: run scripts/pdf-tools.sh (Debian: apt-get install poppler-utils)", tool)
			}
			t.Skipf("%s is not installed: run scripts/pdf-tools.sh (Debian: apt-get install poppler-utils)", tool)
		}
	}
	for _, e := range readCorpus(t) {
		file := filepath.Join(corpusDir, e.File)
		out, err := pdfcorpus.PopplerText(file)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := pdfcorpus.ReadReference(corpusDir, e); err != nil || !bytes.Equal(out, want) {
			t.Errorf("%s: pdftotext now reads %d bytes unlike the reference (%d bytes, %v): run scripts/pdf-corpus.sh", e.File, len(out), len(want), err)
		}
		pages, title, err := pdfcorpus.PopplerInfo(file)
		if err != nil {
			t.Fatal(err)
		}
		if pages != e.Pages || title != e.Title {
			t.Errorf("%s: pdfinfo reads %d pages, title %q; corpus.json %d, %q", e.File, pages, title, e.Pages, e.Title)
		}
	}
}
