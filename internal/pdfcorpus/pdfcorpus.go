// Package pdfcorpus reads package inspect's PDF corpus (inspect/testdata/pdf,
// made by scripts/pdf-corpus.sh with real generators) and poppler's reading
// of it, the reference the PDF reader is held to by inspect's tests and the
// CLI's.
//
// "The same text" means the same words in the same order: both texts split
// at white space (pdftotext -layout pads columns with spaces; the reader
// writes one space between words, or as many as a table's gap holds), after
// dropping the directional marks poppler wraps right-to-left runs in.
package pdfcorpus

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Entry is one file of the corpus, as corpus.json lists it.
type Entry struct {
	File      string `json:"file"`
	Generator string `json:"generator"`
	Pages     int    `json:"pages"`           // pdfinfo's
	Title     string `json:"title,omitempty"` // pdfinfo's
	NoText    []int  `json:"no_text,omitempty"`
}

// ReferenceName is the file that holds poppler's text of the PDF file:
// NAME.txt, gzipped as NAME.txt.gz when large.
func ReferenceName(file string) string { return strings.TrimSuffix(file, ".pdf") + ".txt" }

// Read lists the corpus in dir.
func Read(dir string) ([]Entry, error) {
	b, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	if err != nil {
		return nil, err
	}
	var c []Entry
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "corpus.json"), err)
	}
	return c, nil
}

// ReadReference is the reference text of e (pdftotext -layout's output,
// every page ended by a form feed) as committed.
func ReadReference(dir string, e Entry) ([]byte, error) {
	name := filepath.Join(dir, ReferenceName(e.File))
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

// Pages is the reference text of e, one string a page.
func Pages(dir string, e Entry) ([]string, error) {
	b, err := ReadReference(dir, e)
	if err != nil {
		return nil, err
	}
	pages := strings.Split(string(b), "\f")
	return pages[:len(pages)-1], nil // pdftotext ends every page with a form feed
}

// Words is text's words: split at white space, directional marks dropped.
func Words(text string) []string {
	return strings.Fields(strings.Map(func(r rune) rune {
		switch {
		case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return -1
		}
		return r
	}, text))
}

// PopplerText is poppler's reading of the PDF file, as the references
// hold it: pdftotext -layout, UTF-8.
func PopplerText(file string) ([]byte, error) {
	out, err := exec.Command("pdftotext", "-layout", "-enc", "UTF-8", file, "-").Output()
	if err != nil {
		return nil, fmt.Errorf("pdftotext %s: %w", file, err)
	}
	return out, nil
}

// PopplerInfo is pdfinfo's page count and title of the PDF file.
func PopplerInfo(file string) (pages int, title string, err error) {
	out, err := exec.Command("pdfinfo", "-enc", "UTF-8", file).Output()
	if err != nil {
		return 0, "", fmt.Errorf("pdfinfo %s: %w", file, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(l, ":")
		switch k {
		case "Pages":
			if pages, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return 0, "", fmt.Errorf("pdfinfo %s: pages %q", file, v)
			}
		case "Title":
			title = strings.TrimSpace(v)
		}
	}
	return pages, title, nil
}
