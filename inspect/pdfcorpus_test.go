package inspect

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The PDF corpus (testdata/pdf, made by scripts/pdf-corpus.sh with
// Chromium, Ghostscript and qpdf) and poppler's reading of each file: the
// reference the reader is held to. "The same text" means the same words in
// the same order: both texts split at white space (pdftotext -layout pads
// columns with spaces, this reader writes one space between words or as
// many as a table's gap holds), after dropping the directional marks
// poppler wraps right-to-left runs in.

// corpusEntry is one file of testdata/pdf/corpus.json.
type corpusEntry struct {
	File      string `json:"file"`
	Generator string `json:"generator"`
	Pages     int    `json:"pages"`
	Title     string `json:"title"`
	NoText    []int  `json:"no_text"`
}

const corpusDir = "testdata/pdf"

func readCorpus(t testing.TB) []corpusEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c []corpusEntry
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c) < 10 {
		t.Fatalf("corpus.json lists %d files", len(c))
	}
	return c
}

// reference is poppler's text of file, one string per page.
func reference(t testing.TB, file string) []string {
	t.Helper()
	b, err := readReference(strings.TrimSuffix(filepath.Join(corpusDir, file), ".pdf") + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	pages := strings.Split(string(b), "\f")
	return pages[:len(pages)-1] // pdftotext ends every page with a form feed
}

func readReference(name string) ([]byte, error) {
	if b, err := os.ReadFile(name); err == nil || !os.IsNotExist(err) {
		return b, err
	}
	f, err := os.Open(name + ".gz")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(z)
}

// words is text's words: split at white space, poppler's directional
// marks dropped.
func words(text string) []string {
	return strings.Fields(strings.Map(func(r rune) rune {
		switch {
		case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return -1
		}
		return r
	}, text))
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
			data, err := os.ReadFile(filepath.Join(corpusDir, e.File))
			if err != nil {
				t.Fatal(err)
			}
			ref := reference(t, e.File)
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
				if w, g := words(want), words(got); !slices.Equal(g, w) {
					t.Errorf("page %d's words\n got %q\nwant %q", page, g, w)
				}
				if len(words(want)) == 0 {
					noText = append(noText, strconv.Itoa(page))
				}
				all = append(all, words(want)...)
				text, n, err := PDFPageText(context.Background(), bytes.NewReader(data), int64(len(data)), page)
				if err != nil || n != e.Pages || !slices.Equal(words(text), words(want)) {
					t.Errorf("PDFPageText(%d) = %q, %d, %v; want poppler's words, %d pages", page, text, n, err, e.Pages)
				}
			}
			if !startsWith(words(s.Text), all) {
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
		out, err := exec.Command("pdftotext", "-layout", "-enc", "UTF-8", file, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext %s: %v", file, err)
		}
		if want, err := readReference(strings.TrimSuffix(file, ".pdf") + ".txt"); err != nil || !bytes.Equal(out, want) {
			t.Errorf("%s: pdftotext now reads %d bytes unlike the reference (%d bytes, %v): run scripts/pdf-corpus.sh", e.File, len(out), len(want), err)
		}
		info, err := exec.Command("pdfinfo", "-enc", "UTF-8", file).Output()
		if err != nil {
			t.Fatalf("pdfinfo %s: %v", file, err)
		}
		var pages, title string
		for _, l := range strings.Split(string(info), "\n") {
			k, v, _ := strings.Cut(l, ":")
			switch k {
			case "Pages":
				pages = strings.TrimSpace(v)
			case "Title":
				title = strings.TrimSpace(v)
			}
		}
		if pages != strconv.Itoa(e.Pages) || title != e.Title {
			t.Errorf("%s: pdfinfo reads %s pages, title %q; corpus.json %d, %q", e.File, pages, title, e.Pages, e.Title)
		}
	}
}
