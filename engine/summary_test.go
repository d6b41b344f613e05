package engine

import (
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/inspect"
)

func TestRender(t *testing.T) {
	t.Parallel()
	v := templateVars{
		Ref:  ArtifactRef{ID: "tableau_1a2b3c4d5e6f", SizeBytes: 2_300_000, Filename: "Sales.pdf", MIMEType: "application/pdf", URI: "mcpx://artifacts/tableau_1a2b3c4d5e6f"},
		Kind: "PDF",
		Lookup: func(name string) string {
			return map[string]string{".name": "Sales Dashboard", "arg.id": "42"}[name]
		},
	}
	for tmpl, want := range map[string]string{
		"Downloaded {kind} '{.name}' ({size}). Artifact: {id}": "Downloaded PDF 'Sales Dashboard' (2.3 MB). Artifact: tableau_1a2b3c4d5e6f",
		"{.missing|.name|filename} #{arg.id}":                  "Sales Dashboard #42",
		"{.missing}{name}":                                     "Sales",
		"report{1}.pdf {unknown}":                              "report{1}.pdf {unknown}",
	} {
		if got := render(tmpl, v); got != want {
			t.Errorf("%q: got %q want %q", tmpl, got, want)
		}
	}
}

// TestDefaultSummaryContent pins the default summary of each kind of
// content, including those this package's tests cannot produce from bytes
// (PDF pages and text, archive entries), and the {content.*} fields.
func TestDefaultSummaryContent(t *testing.T) {
	t.Parallel()
	ref := ArtifactRef{ID: "s_1a2b3c4d5e6f", SizeBytes: 1_600_000, URI: "mcpx://artifacts/s_1a2b3c4d5e6f"}
	tail := " is not in this result: it is stored as artifact s_1a2b3c4d5e6f and can be referenced by that id or as mcpx://artifacts/s_1a2b3c4d5e6f"
	named := func(name string) ArtifactRef { r := ref; r.Filename = name; return r }
	for _, tc := range []struct {
		kind string
		ref  ArtifactRef
		c    inspect.Summary
		want string
	}{
		{"PDF", named("Q3 Report.pdf"), inspect.Summary{Kind: "pdf", Pages: 12, Text: "Quarterly revenue\ngrew  by 12%"},
			`PDF 'Q3 Report.pdf' (12 pages, 1.6 MB) starting "Quarterly revenue grew by 12%"` + tail + " — ask artifacts_query for page 2, artifacts_search for words"},
		{"Binary content", named("a.zip"), inspect.Summary{Kind: "archive", Format: "zip", Entries: 14, Names: []string{"a.txt", "b/"}},
			"ZIP archive 'a.zip' (1.6 MB, 14 entries: a.txt, b/, …)" + tail + " — ask artifacts_query for an entry by name"},
		{"Binary content", ref, inspect.Summary{Kind: "archive", Format: "xlsx", Entries: 9, Sheets: []string{"Q1", "Q2"}},
			"XLSX workbook (1.6 MB, sheets: Q1, Q2, 9 entries)" + tail + " — ask artifacts_query for an entry by name"},
		{"MPEG audio", ref, inspect.Summary{Kind: "audio", Format: "mp3", DurationMS: 3_725_000},
			"MP3 audio (1:02:05, 1.6 MB)" + tail},
		{"Text", ref, inspect.Summary{Kind: "text", Lines: 12034, Partial: "time"},
			"Text of at least 12,034 lines (1.6 MB)" + tail + " — ask artifacts_query for lines 1-100 or a grep, artifacts_search for words"},
		{"JSON", ref, inspect.Summary{Kind: "json", Keys: []string{"a", "b", "c"}},
			"JSON object with keys a, b, c (1.6 MB)" + tail + " — ask artifacts_query for a JSON path or jq"},
		{"Text", ref, inspect.Summary{Kind: "csv", Format: "csv", Lines: 1205, Rows: 1204, Columns: []string{"id", "name"}},
			"CSV with 1,204 rows and columns id, name (1.6 MB)" + tail + " — ask artifacts_query for lines 1-100 or a grep, artifacts_search for words"},
		// A summary without what the default needs: the plain one.
		{"PNG image", ref, inspect.Summary{Kind: "image", Format: "png"}, "PNG image (1.6 MB)" + tail},
	} {
		c := tc.c
		if got := defaultSummary(templateVars{Ref: tc.ref, Kind: tc.kind, Content: &c}); got != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.c.Kind, got, tc.want)
		}
	}
	c := inspect.Summary{Kind: "pdf", Pages: 3, Title: "Q3", Names: []string{"x", "y"}, DurationMS: 4500}
	v := templateVars{Ref: ref, Content: &c, Tools: QueryTools{Query: "q"}}
	for tmpl, want := range map[string]string{
		"{content.pages} pages of {content.title}": "3 pages of Q3",
		"{content.names} {content.duration}":       "x, y 4.5 s",
		"{content.width|size}":                     "1.6 MB",
		"{content.nosuch}":                         "{content.nosuch}",
	} {
		if got := render(tmpl, v); got != want {
			t.Errorf("%q: got %q want %q", tmpl, got, want)
		}
	}
	if got := defaultSummary(v); !strings.HasSuffix(got, "ask q for page 2, artifacts_search for words") {
		t.Errorf("configured tool name not used: %q", got)
	}
}

// TestLayerSummaryKeepsWhatTheEngineKnows: a layer's template is its own
// words, first; the engine appends what the bytes say, the reference
// with its mcpx:// URI and how to look further, each unless the template
// already names it ({content} or a {content.*} field, {uri}, {hint}). A
// value a limit refused says so whatever the template says.
func TestLayerSummaryKeepsWhatTheEngineKnows(t *testing.T) {
	t.Parallel()
	ref := ArtifactRef{ID: "tableau_1a68d2e7d250", SizeBytes: 1573, Filename: "Sales Dashboard.pdf", MIMEType: "application/pdf", URI: "mcpx://artifacts/tableau_1a68d2e7d250"}
	c := inspect.Summary{Kind: "pdf", Pages: 1, Text: "Sales Dashboard - FY2025 Region Q1"}
	v := templateVars{Ref: ref, Kind: "PDF", Content: &c, Lookup: func(name string) string { return map[string]string{".name": "Sales Dashboard"}[name] }}
	const (
		content = `PDF 'Sales Dashboard.pdf' (1 page, 1.6 kB) starting "Sales Dashboard - FY2025 Region Q1"`
		stored  = " is not in this result: it is stored as artifact tableau_1a68d2e7d250 and can be referenced by that id or as mcpx://artifacts/tableau_1a68d2e7d250"
		hint    = "ask artifacts_query for page 1, artifacts_search for words"
	)
	for _, tc := range []struct{ tmpl, want string }{
		{"Downloaded workbook '{.name}'", "Downloaded workbook 'Sales Dashboard' — " + content + stored + " — " + hint},
		{"Downloaded workbook '{.name}' ({content.pages} pages)", "Downloaded workbook 'Sales Dashboard' (1 pages) — it" + stored + " — " + hint},
		{"Workbook '{.name}': {content}", "Workbook 'Sales Dashboard': " + content + " — it" + stored + " — " + hint},
		{"Workbook '{.name}' at {uri}", "Workbook 'Sales Dashboard' at mcpx://artifacts/tableau_1a68d2e7d250 — " + content + " — " + hint},
		{"Workbook at {uri}; {hint}", "Workbook at mcpx://artifacts/tableau_1a68d2e7d250; " + hint + " — " + content},
		{"{content} at {uri}, {hint}", content + " at mcpx://artifacts/tableau_1a68d2e7d250, " + hint},
		{"{.missing}", content + stored + " — " + hint},
	} {
		if got := layerSummary(tc.tmpl, v); got != tc.want {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.tmpl, got, tc.want)
		}
	}
	refused := v
	refused.Ref.NotStored = &NotStored{Reason: "over the per-artifact limit of 1 kB (retention.max_artifact_bytes)"}
	want := "Workbook at mcpx://artifacts/tableau_1a68d2e7d250 — " + content + " was removed from this result and NOT stored: over the per-artifact limit of 1 kB (retention.max_artifact_bytes). Artifact: tableau_1a68d2e7d250"
	if got := layerSummary("Workbook at {uri}", refused); got != want {
		t.Errorf("not stored:\ngot  %q\nwant %q", got, want)
	}
}

// TestSummaryNamesPagesWithoutText: a PDF's pages with no text (a scan, a
// drawing) are named, so the model knows the text it reads is not all;
// a client that takes images is told to look at such a page, one that
// takes none is not pointed at what it cannot see.
func TestSummaryNamesPagesWithoutText(t *testing.T) {
	ref := ArtifactRef{ID: "s_1a2b3c4d5e6f", SizeBytes: 1_600_000, URI: "mcpx://artifacts/s_1a2b3c4d5e6f"}
	const tail = " is not in this result: it is stored as artifact s_1a2b3c4d5e6f and can be referenced by that id or as mcpx://artifacts/s_1a2b3c4d5e6f"
	for _, tc := range []struct {
		name   string
		c      inspect.Summary
		images bool
		want   string
	}{
		{"one scanned page", inspect.Summary{Kind: "pdf", Pages: 3, Text: "Costs", NoTextPages: 1, NoText: []int{2}}, true,
			`PDF (3 pages, 1.6 MB) starting "Costs"; page 2 has no text (a scan or a drawing)` + tail + ` — ask artifacts_query for page 2 with view "image" to look at it, artifacts_search for words`},
		{"several", inspect.Summary{Kind: "pdf", Pages: 30, Text: "Costs", NoTextPages: 12, NoText: []int{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}, true,
			`PDF (30 pages, 1.6 MB) starting "Costs"; pages 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, … (12 in all) have no text (scans or drawings)` + tail + ` — ask artifacts_query for page 2, or for page 3 with view "image" to look at it, artifacts_search for words`},
		{"all scanned", inspect.Summary{Kind: "pdf", Pages: 2, NoTextPages: 2, NoText: []int{1, 2}}, true,
			`PDF (2 pages, 1.6 MB); no page has text (scans or drawings)` + tail + ` — ask artifacts_query for page 1 with view "image" to look at it`},
		{"no images", inspect.Summary{Kind: "pdf", Pages: 3, Text: "Costs", NoTextPages: 2, NoText: []int{1, 3}}, false,
			`PDF (3 pages, 1.6 MB) starting "Costs"; pages 1, 3 have no text (scans or drawings)` + tail + ` — ask artifacts_query for page 2, artifacts_search for words`},
		{"no images, all scanned", inspect.Summary{Kind: "pdf", Pages: 1, NoTextPages: 1, NoText: []int{1}}, false,
			`PDF (1 page, 1.6 MB); no page has text (scans or drawings)` + tail},
	} {
		c := tc.c
		if got := defaultSummary(templateVars{Ref: ref, Kind: "PDF", Content: &c, Images: tc.images}); got != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, got, tc.want)
		}
	}
	c := inspect.Summary{Kind: "pdf", Pages: 9, NoTextPages: 2, NoText: []int{4, 9}}
	if got := render("{content.no_text_pages} scanned: {content.no_text}", templateVars{Ref: ref, Content: &c}); got != "2 scanned: 4, 9" {
		t.Errorf("content.no_text: %q", got)
	}
}
