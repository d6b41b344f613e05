package engine

import "testing"

func TestRender(t *testing.T) {
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
