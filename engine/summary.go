package engine

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/humanize"
)

// templateVars are the values a summary or filename template can name.
type templateVars struct {
	Ref    ArtifactRef
	Kind   string // "PDF", "PNG image", "text", "JSON"
	Chars  int    // characters of text stored, for text artifacts
	Server string
	Tool   string
	Path   string
	// Lookup resolves ".key" (a sibling of the value) and "arg.key" (a call
	// argument); nil resolves nothing.
	Lookup func(name string) string
}

// render fills a template. A placeholder is {name}; {a|b|c} takes the first
// non-empty of several. Names: kind, mime, filename, name (the file name
// without extension), size (human, "2.3 MB"), bytes, chars, id, uri, url,
// server, tool, path, .key (a sibling field of the value, as in
// {.name}) and arg.key (an argument of the call). A known name with no value
// renders empty; braces around anything else are kept as they are.
func render(tmpl string, v templateVars) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			b.WriteString(tmpl)
			break
		}
		b.WriteString(tmpl[:i])
		known := false
		for _, name := range strings.Split(tmpl[i+1:i+j], "|") {
			name = strings.TrimSpace(name)
			known = known || isVar(name)
			if s := v.lookup(name); s != "" {
				b.WriteString(s)
				break
			}
		}
		if !known {
			// Not a placeholder (a file name with braces): keep it.
			b.WriteString(tmpl[i : i+j+1])
		}
		tmpl = tmpl[i+j+1:]
	}
	return b.String()
}

var varNames = map[string]bool{"kind": true, "mime": true, "filename": true, "name": true, "size": true, "bytes": true, "chars": true, "id": true, "uri": true, "url": true, "server": true, "tool": true, "path": true}

func isVar(name string) bool {
	return varNames[name] || (len(name) > 1 && name[0] == '.') || strings.HasPrefix(name, "arg.")
}

func (v templateVars) lookup(name string) string {
	switch name {
	case "kind":
		return v.Kind
	case "mime":
		return v.Ref.MIMEType
	case "filename":
		return v.Ref.Filename
	case "name":
		return strings.TrimSuffix(v.Ref.Filename, path.Ext(v.Ref.Filename))
	case "size":
		return humanize.Bytes(v.Ref.SizeBytes)
	case "bytes":
		return strconv.FormatInt(v.Ref.SizeBytes, 10)
	case "chars":
		return strconv.Itoa(v.Chars)
	case "id":
		return v.Ref.ID
	case "uri":
		return v.Ref.URI
	case "url":
		return v.Ref.URL
	case "server":
		return v.Server
	case "tool":
		return v.Tool
	case "path":
		return v.Path
	}
	if v.Lookup != nil && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "arg.")) {
		return v.Lookup(name)
	}
	return ""
}

// defaultSummary is the summary used when a rewrite gives no template. It
// tells the model what it got and how to reference it. No punctuation
// touches an id, URI or URL: a reader (or a model) that takes "URL." or
// "URI," literally gets a 403 or an unknown resource.
func defaultSummary(v templateVars) string {
	var b strings.Builder
	kind := v.Kind
	if kind == "" {
		kind = "Content"
	}
	b.WriteString(kind)
	if v.Ref.Filename != "" {
		fmt.Fprintf(&b, " '%s'", v.Ref.Filename)
	}
	if v.Chars > 0 {
		fmt.Fprintf(&b, " (%d chars, %s)", v.Chars, humanize.Bytes(v.Ref.SizeBytes))
	} else {
		fmt.Fprintf(&b, " (%s)", humanize.Bytes(v.Ref.SizeBytes))
	}
	if v.Ref.NotStored != nil {
		fmt.Fprintf(&b, " was removed from this result and NOT stored: %s. Artifact: %s", v.Ref.NotStored.Reason, v.Ref.ID)
		return b.String()
	}
	if v.Ref.Truncated {
		fmt.Fprintf(&b, " was removed from this result and NOT stored (no artifact store is configured). Artifact: %s", v.Ref.ID)
		return b.String()
	}
	fmt.Fprintf(&b, " is not in this result: it is stored as artifact %s and can be referenced by that id or as %s", v.Ref.ID, v.Ref.URI)
	if v.Ref.URL != "" {
		fmt.Fprintf(&b, " or downloaded from %s", v.Ref.URL)
	}
	return b.String()
}
