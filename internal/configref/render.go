package configref

import (
	"bytes"
	"fmt"
	"go/doc/comment"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/mdanchor"
)

// Header is the first line of a rendered reference: it says where the
// text comes from and how to remake it.
const Header = "<!-- Generated from the config types' doc comments by internal/configref; DO NOT EDIT. Run: go generate ./cmd/mcpx/internal/configdoc -->"

// Markdown renders the reference: the root package's doc, a contents
// list of the sections, then each section with its keys, each key under
// its own heading (its full path), so prose can link to it.
func (r Reference) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\n# Configuration reference\n\n", Header)
	b.Write(markdown(r.Intro))
	b.WriteString("\n## Sections\n\n")
	layers := false
	for _, s := range r.Sections {
		if s.Summary != "" && !layers {
			layers = true
			b.WriteString("- Layer options, under `pipeline.layers` (and per server and tool under `pipeline.servers`; each layer also takes `\"enabled\": false`):\n")
		}
		fmt.Fprintf(&b, "%s- [%s](#%s)\n", strings.Repeat("  ", s.Depth), title(s.Path), mdanchor.Slug(title(s.Path)))
	}
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "\n## %s\n\n", title(s.Path))
		if s.Summary != "" {
			fmt.Fprintf(&b, "The %s layer: %s.\n\n", strings.TrimPrefix(s.Path, "pipeline.layers."), s.Summary)
		}
		fmt.Fprintf(&b, "Declared by `%s`.\n\n", s.GoType)
		if s.Doc != "" {
			b.Write(markdown(s.Doc))
			b.WriteString("\n")
		}
		for _, k := range s.Keys {
			fmt.Fprintf(&b, "### `%s`\n\n", k.Path)
			fmt.Fprintf(&b, "- type: %s", k.Type)
			if k.Section != "" {
				fmt.Fprintf(&b, ", described in [%s](#%s)", title(k.Section), mdanchor.Slug(title(k.Section)))
			}
			b.WriteString("\n")
			if k.Deprecated {
				b.WriteString("- deprecated\n")
			}
			if k.Default != "" {
				fmt.Fprintf(&b, "- default: %s\n", k.Default)
			}
			b.WriteString("\n")
			if k.Doc != "" {
				b.Write(markdown(k.Doc))
				b.WriteString("\n")
			}
		}
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// title is a section's heading.
func title(path string) string {
	if path == "" {
		return "Top level"
	}
	return "`" + path + "`"
}

// markdown renders a doc comment; its own headings sit below a key's.
func markdown(doc string) []byte {
	var p comment.Parser
	pr := comment.Printer{HeadingLevel: 4}
	return pr.Markdown(p.Parse(doc))
}

// The reference mcpx ships: the tree the CLI loads, and where its
// rendering lives in the repository.
const (
	RootPackage = "github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	RootType    = "File"
	Output      = "docs/config.md"
)

// Generate renders the reference of mcpx's configuration file, reading
// the module at dir, with the options of the given layers (the default
// registry's, in its chain order).
func Generate(dir string, layers []LayerOptions) ([]byte, error) {
	ref, err := Load(dir, RootPackage, RootType, layers)
	if err != nil {
		return nil, err
	}
	return ref.File(), nil
}

// File is the reference as Generate writes it to Output: its Markdown
// and a final newline.
func (r Reference) File() []byte { return append(r.Markdown(), '\n') }
