package rules

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/gosrc"
	"github.com/mcpx-dev/mcpx/internal/mdanchor"
)

// A Markdown link's target, and the spans a link cannot be in.
var (
	mdLink     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	fencedCode = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
)

// TestDocLinksResolve: every relative link in README.md, CONTRIBUTING.md
// and docs/*.md names a file or folder of the repository, and every
// "#anchor" (in the same document or another Markdown file) names one of
// that document's headings, so moving a section never strands a link.
func TestDocLinksResolve(t *testing.T) {
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md")}, docs...)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = mdanchor.Anchors(b)
		return anchors[path], nil
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		text := fencedCode.ReplaceAllString(string(b), "")
		text = inlineCode.ReplaceAllString(text, "code")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), filepath.FromSlash(path))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %q: no such file or folder", rel, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			a, err := anchorsOf(file)
			if err != nil {
				t.Errorf("%s: link %q: %v", rel, target, err)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s: link %q: no heading with that anchor", rel, target)
			}
		}
	}
}
