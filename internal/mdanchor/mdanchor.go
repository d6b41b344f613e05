// Package mdanchor names the anchors a Markdown renderer such as GitHub's
// gives a document's headings, so that the generated configuration
// reference can link to its own sections and a test can check that every
// "#anchor" a document links to exists.
package mdanchor

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"unicode"
)

// Slug is the anchor of one heading's text: lower case, without the
// characters GitHub drops (punctuation but '-' and '_', and markup), with
// spaces as '-'.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors returns the anchors of a Markdown document's ATX headings ("#
// Title"), outside fenced code blocks; a repeated heading's anchor takes
// "-1", "-2", ... as GitHub's does.
func Anchors(md []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if trimmed := strings.TrimLeft(line, " "); strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if text != "" && text[0] != ' ' {
			continue // "#hashtag" is not a heading
		}
		slug := Slug(text)
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
