package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/pdfcorpus"
)

// TestPDFCorpusThroughTheCLI: every file of inspect's PDF corpus (made by
// real generators; poppler's reading is the reference) through mcpx as a
// model meets it, returned by a tool as an embedded PDF: the summary says
// how many pages and starts with the document's first words; "artifacts
// query --page N" answers every page with poppler's words, and says so of
// a page without text; "artifacts search" finds every page with text by its
// first line. The inspection's time cap is raised so that a loaded
// machine reads every page of the 100-page file (its timings are
// BENCHMARKS.md's).
func TestPDFCorpusThroughTheCLI(t *testing.T) {
	isolate(t)
	const dir = "../../../../inspect/testdata/pdf"
	corpus, err := pdfcorpus.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"pipeline": {"inspect": {"timeout_ms": 60000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "artifacts")
	for _, e := range corpus {
		t.Run(e.File, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, e.File))
			if err != nil {
				t.Fatal(err)
			}
			pages, err := pdfcorpus.Pages(dir, e)
			if err != nil {
				t.Fatal(err)
			}
			in, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "resource", "resource": map[string]string{
				"uri": "file:///" + e.File, "mimeType": "application/pdf", "blob": base64.StdEncoding.EncodeToString(data)}}}})
			tr := runCLI(t, bytes.NewReader(in), "transform", "--config", cfg, "--store", st, "--server", "corpus")
			if tr.code != exitOK {
				t.Fatalf("transform: exit %d: %s", tr.code, tr.stderr)
			}
			summary := gjson.Get(tr.stdout, "content.0.text").String()
			id := gjson.Get(tr.stdout, `content.#(type=="resource_link").uri`).String()
			id = strings.TrimPrefix(id, "mcpx://artifacts/")
			var first []string
			for _, p := range pages {
				if first = pdfcorpus.Words(p); len(first) > 0 {
					break
				}
			}
			count := fmt.Sprintf("(%d page", e.Pages)
			if id == "" || !strings.Contains(summary, count) || !strings.Contains(summary, `starting "`+strings.Join(first[:min(2, len(first))], " ")) {
				t.Fatalf("summary %q (artifact %q): want %s and a start of %q", summary, id, count, first)
			}
			for i, want := range pages {
				page := strconv.Itoa(i + 1)
				q := runCLI(t, nil, "artifacts", "query", "--store", st, "--page", page, id)
				if ws := pdfcorpus.Words(want); len(ws) == 0 {
					if q.code != exitOK || strings.TrimSpace(q.stdout) != "" || !strings.Contains(q.stderr, "page "+page+" of "+strconv.Itoa(e.Pages)+" has no text") {
						t.Errorf("--page %s (no text): exit %d, %q, %q", page, q.code, q.stdout, q.stderr)
					}
					continue
				} else if got := pdfcorpus.Words(q.stdout); q.code != exitOK || !slices.Equal(got, ws) {
					t.Errorf("--page %s: exit %d, %q (%s); want poppler's %q", page, q.code, got, q.stderr, ws)
				}
				// The page's first line as a phrase: the 100-page file
				// repeats its other lines on every page.
				phrase := `"` + strings.Join(pdfcorpus.Words(strings.SplitN(strings.TrimSpace(want), "\n", 2)[0]), " ") + `"`
				s := runCLI(t, nil, "artifacts", "search", "--store", st, "--limit", "200", phrase)
				if at := id + "\tpage " + page; !strings.Contains(s.stdout, at+",") && !strings.Contains(s.stdout, at+"\t") {
					t.Errorf("search %s: exit %d, %.300q; want %s at page %s", phrase, s.code, s.stdout, id, page)
				}
			}
		})
	}
}
