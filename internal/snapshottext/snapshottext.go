// Package snapshottext generates the large text results the text-path
// benchmarks measure: an accessibility snapshot shaped as @playwright/mcp's
// browser_snapshot answers it (YAML-like lines, each with quoted names, so
// its JSON string holds a \" or \n escape every dozen bytes), and plain
// text of the same size with no escape at all. Both are deterministic.
package snapshottext

import (
	"fmt"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
)

// roles and names are what the snapshot's lines are made of.
var (
	roles = []string{"link", "button", "listitem", "heading", "generic", "cell", "row", "img", "textbox", "checkbox"}
	names = []string{"Products", "Sign in", "Add to cart", "Next page", "Search", "Qty: 2", "Total \\ price", "Close dialog", "Docs", "Settings"}
)

// Snapshot returns an accessibility snapshot of exactly chars bytes
// (ASCII, so bytes and characters agree).
func Snapshot(chars int) string {
	var b strings.Builder
	b.Grow(chars + 128)
	b.WriteString("### Page\n- Page URL: https://shop.example/\n- Page Title: Shop\n### Snapshot\n```yaml\n- generic [active] [ref=e1]:\n")
	for i := 2; b.Len() < chars; i++ {
		depth := 1 + i%6
		b.WriteString(strings.Repeat("  ", depth))
		fmt.Fprintf(&b, "- %s \"%s %d\" [ref=e%d]", roles[i%len(roles)], names[(i/3)%len(names)], i, i)
		if i%4 == 0 {
			b.WriteString(" [cursor=pointer]:\n")
			b.WriteString(strings.Repeat("  ", depth+1))
			fmt.Fprintf(&b, "- /url: /item/%d\n", i)
		} else {
			b.WriteString("\n")
		}
	}
	return b.String()[:chars]
}

// Plain returns chars bytes of ASCII words and spaces: text whose JSON
// string holds no escape.
func Plain(chars int) string {
	const words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
	return strings.Repeat(words, chars/len(words)+1)[:chars]
}

// Result wraps text as a CallToolResult with one text block.
func Result(text string) []byte {
	out := []byte(`{"content":[{"type":"text","text":`)
	out = jsonstr.AppendString(out, text)
	return append(out, `}],"isError":false}`...)
}
