package engine

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/inspect"
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
	// Content is what the stored bytes say (content.* fields); nil when
	// nothing was inspected.
	Content *inspect.Summary
	// Tools names the tools a default summary tells the model to ask.
	Tools QueryTools
	// NotBase64: the value was to be decoded from base64 but is not base64
	// that decodes back to the same string, so the string itself is
	// stored, as text; Declared is the MIME type it declared, if any. The
	// default summary keeps both in sight.
	NotBase64 bool
	Declared  string
	// Images: the client takes images (View.Images), so a PDF page with
	// no text is pointed at as an image to look at.
	Images bool
}

// render fills a template. A placeholder is {name}; {a|b|c} takes the first
// non-empty of several. Names: kind, mime, filename, name (the file name
// without extension), size (human, "2.3 MB"), bytes, chars, id, uri, url,
// server, tool, path, content (what the bytes are, as the default summary
// says it: "PDF 'Q3.pdf' (12 pages, 1.6 MB) starting \"…\""), hint (how to
// look further: "ask artifacts_query for page 2, artifacts_search for
// words"), .key (a sibling field of the value, as in {.name}), arg.key (an
// argument of the call) and content.field (what the bytes say:
// content.pages, content.text, content.width, content.height,
// content.entries, content.names, content.lines, content.keys,
// content.columns, content.rows, content.duration, content.no_text (a
// PDF's pages without text) ...; see contentVar). A
// known name with no value renders empty; braces around anything else are
// kept as they are.
func render(tmpl string, v templateVars) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	var b strings.Builder
	scanTemplate(tmpl, func(s string) { b.WriteString(s) }, func(raw string, names []string) {
		known := false
		for _, name := range names {
			known = known || isVar(name)
			if s := v.lookup(name); s != "" {
				b.WriteString(s)
				break
			}
		}
		if !known {
			// Not a placeholder (a file name with braces): keep it.
			b.WriteString(raw)
		}
	})
	return b.String()
}

// scanTemplate walks tmpl: the text between placeholders goes to text,
// each placeholder to placeholder with its raw text ("{a|b}") and its
// names, trimmed.
func scanTemplate(tmpl string, text func(string), placeholder func(raw string, names []string)) {
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			text(tmpl)
			return
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			text(tmpl)
			return
		}
		text(tmpl[:i])
		names := strings.Split(tmpl[i+1:i+j], "|")
		for k := range names {
			names[k] = strings.TrimSpace(names[k])
		}
		placeholder(tmpl[i:i+j+1], names)
		tmpl = tmpl[i+j+1:]
	}
}

var varNames = map[string]bool{"kind": true, "mime": true, "filename": true, "name": true, "size": true, "bytes": true, "chars": true, "id": true, "uri": true, "url": true, "server": true, "tool": true, "path": true, "content": true, "hint": true}

func isVar(name string) bool {
	if c, ok := strings.CutPrefix(name, "content."); ok {
		return contentVars[c]
	}
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
	case "content":
		var b strings.Builder
		v.describe(&b)
		return b.String()
	case "hint":
		var b strings.Builder
		return v.describe(&b)
	}
	if c, ok := strings.CutPrefix(name, "content."); ok {
		return contentVar(v.Content, c)
	}
	if v.Lookup != nil && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "arg.")) {
		return v.Lookup(name)
	}
	return ""
}

// defaultSummary is the summary used when a rewrite gives no template. It
// tells the model what it got (with what the bytes say: pages, dimensions,
// lines, keys), how to reference it and how to look further. No
// punctuation touches an id, URI or URL: a reader (or a model) that takes
// "URL." or "URI," literally gets a 403 or an unknown resource.
func defaultSummary(v templateVars) string { return v.known(said{}) }

// said is what a layer's summary template already says of the three
// things the engine knows of a stored value.
type said struct {
	content bool // {content} or a {content.*} field
	ref     bool // {uri}: how to reference the stored bytes
	hint    bool // {hint}: how to look further
}

// saidBy reads which of the engine's three things tmpl names.
func saidBy(tmpl string) said {
	var s said
	scanTemplate(tmpl, func(string) {}, func(_ string, names []string) {
		for _, n := range names {
			switch {
			case n == "content" || strings.HasPrefix(n, "content."):
				s.content = true
			case n == "uri":
				s.ref = true
			case n == "hint":
				s.hint = true
			}
		}
	})
	return s
}

// layerSummary is the summary of a value a layer named with its own
// template (a preset, a fields rule, a plugin): the layer's words first,
// then, after " — ", what the engine knows that the template does not
// already name: what the bytes are ({content}), how to reference them
// ({uri}, with the id) and how to look further ({hint}). A value that was
// not stored says so whatever the template says: the model must not
// think it can ask for it.
func layerSummary(tmpl string, v templateVars) string {
	own := strings.TrimSpace(render(tmpl, v))
	known := v.known(saidBy(tmpl))
	switch {
	case known == "":
		return own
	case own == "":
		return known
	}
	return own + " — " + known
}

// known is what the engine says of a stored value, less what s says was
// said already: what the bytes are, how to reference them (or why they
// were not stored) and how to look further.
func (v templateVars) known(s said) string {
	var b strings.Builder
	hint := v.describe(&b)
	if s.content {
		b.Reset()
	}
	subject := func() {
		if b.Len() == 0 {
			b.WriteString("it")
		}
	}
	switch {
	case v.Ref.NotStored != nil:
		subject()
		fmt.Fprintf(&b, " was removed from this result and NOT stored: %s. Artifact: %s", v.Ref.NotStored.Reason, v.Ref.ID)
		return b.String()
	case v.Ref.Truncated:
		subject()
		fmt.Fprintf(&b, " was removed from this result and NOT stored (no artifact store is configured). Artifact: %s", v.Ref.ID)
		return b.String()
	case !s.ref:
		subject()
		switch {
		case v.NotBase64 && v.Declared != "":
			fmt.Fprintf(&b, " (declared %s, but not base64 that decodes back to this string: the string itself is stored)", v.Declared)
		case v.NotBase64:
			b.WriteString(" (not base64 that decodes back to this string: the string itself is stored)")
		}
		fmt.Fprintf(&b, " is not in this result: it is stored as artifact %s and can be referenced by that id or as %s", v.Ref.ID, v.Ref.URI)
		if v.Ref.URL != "" {
			fmt.Fprintf(&b, " or downloaded from %s", v.Ref.URL)
		}
	}
	if hint != "" && !s.hint {
		if b.Len() > 0 {
			b.WriteString(" — ")
		}
		b.WriteString(hint)
	}
	return b.String()
}

// describe writes what the artifact is ("PDF 'Q3.pdf' (12 pages, 1.6 MB)
// starting \"…\"") and returns how the model can look further, "" when
// there is nothing to ask for.
func (v templateVars) describe(b *strings.Builder) string {
	c := v.Content
	size := humanize.Bytes(v.Ref.SizeBytes)
	name := ""
	if v.Ref.Filename != "" {
		name = fmt.Sprintf(" '%s'", v.Ref.Filename)
	}
	kind := v.Kind
	if kind == "" {
		kind = "Content"
	}
	atLeast := ""
	if c != nil && c.Partial != "" {
		atLeast = "at least "
	}
	query, search := v.Tools.names()
	switch {
	case c == nil:
	case c.Kind == "pdf":
		fmt.Fprintf(b, "PDF%s (", name)
		if c.Pages > 0 {
			fmt.Fprintf(b, "%s, ", plural(int64(c.Pages), "page"))
		}
		fmt.Fprintf(b, "%s)", size)
		if t := excerpt(c.Text, 200); t != "" {
			fmt.Fprintf(b, " starting %q", t)
		}
		page := 1
		if c.Pages > 1 {
			page = 2
		}
		if c.NoTextPages == 0 {
			return fmt.Sprintf("ask %s for page %d, %s for words", query, page, search)
		}
		b.WriteString(noTextPages(c))
		look := page
		if len(c.NoText) > 0 {
			look = c.NoText[0]
		}
		switch {
		case !v.Images && c.NoTextPages == c.Pages:
			return ""
		case !v.Images:
			return fmt.Sprintf("ask %s for page %d, %s for words", query, page, search)
		case c.NoTextPages == c.Pages:
			return fmt.Sprintf("ask %s for page %d with view \"image\" to look at it", query, look)
		case look == page:
			return fmt.Sprintf("ask %s for page %d with view \"image\" to look at it, %s for words", query, look, search)
		}
		return fmt.Sprintf("ask %s for page %d, or for page %d with view \"image\" to look at it, %s for words", query, page, look, search)
	case c.Kind == "image" && c.Width > 0:
		fmt.Fprintf(b, "%s%s %dx%d (%s)", kind, name, c.Width, c.Height, size)
		return ""
	case c.Kind == "archive":
		fmt.Fprintf(b, "%s%s (%s", archiveKind(c.Format), name, size)
		switch {
		case len(c.Sheets) > 0:
			fmt.Fprintf(b, ", sheets: %s", list(c.Sheets, 10))
		case c.Words > 0:
			fmt.Fprintf(b, ", %s words", thousands(int64(c.Words)))
		}
		if c.Entries > 0 {
			fmt.Fprintf(b, ", %s", plural(int64(c.Entries), "entry"))
			if len(c.Names) > 0 {
				more := ""
				if c.Entries > len(c.Names) {
					more = ", …"
				}
				fmt.Fprintf(b, ": %s%s", list(c.Names, 10), more)
			}
		}
		b.WriteString(")")
		return fmt.Sprintf("ask %s for an entry by name", query)
	case (c.Kind == "audio" || c.Kind == "video") && c.DurationMS > 0:
		k := kind
		if c.Format != "" {
			k = strings.ToUpper(c.Format) + " " + c.Kind
		}
		fmt.Fprintf(b, "%s%s (%s, %s)", k, name, duration(c.DurationMS), size)
		return ""
	case c.Kind == "json" && (c.Keys != nil || c.Length > 0):
		if c.Keys != nil {
			fmt.Fprintf(b, "JSON object%s", name)
			if len(c.Keys) > 0 {
				fmt.Fprintf(b, " with keys %s", list(c.Keys, 10))
			}
		} else {
			fmt.Fprintf(b, "JSON array%s of %s%s", name, atLeast, plural(int64(c.Length), "item"))
			if len(c.ItemKeys) > 0 {
				fmt.Fprintf(b, " with keys %s", list(c.ItemKeys, 10))
			}
		}
		fmt.Fprintf(b, " (%s)", size)
		return fmt.Sprintf("ask %s for a JSON path or jq", query)
	case c.Kind == "csv" && len(c.Columns) > 0:
		fmt.Fprintf(b, "%s%s with %s%s and columns %s (%s)", strings.ToUpper(nonEmpty(c.Format, "csv")), name, atLeast, plural(c.Rows, "row"), list(c.Columns, 10), size)
		return fmt.Sprintf("ask %s for lines 1-%d or a grep, %s for words", query, min(c.Lines, 100), search)
	case (c.Kind == "text" || c.Kind == "json" || c.Kind == "csv") && c.Lines > 0:
		fmt.Fprintf(b, "%s%s of %s%s (", kind, name, atLeast, plural(c.Lines, "line"))
		if v.Chars > 0 {
			fmt.Fprintf(b, "%s chars, ", thousands(int64(v.Chars)))
		}
		fmt.Fprintf(b, "%s)", size)
		if c.Lines == 1 {
			return fmt.Sprintf("ask %s for a grep, %s for words", query, search)
		}
		return fmt.Sprintf("ask %s for lines 1-%d or a grep, %s for words", query, min(c.Lines, 100), search)
	}
	b.WriteString(kind)
	b.WriteString(name)
	if v.Chars > 0 {
		fmt.Fprintf(b, " (%d chars, %s)", v.Chars, size)
	} else {
		fmt.Fprintf(b, " (%s)", size)
	}
	return ""
}

// noTextPages says which of a PDF's pages have no text to read (scans,
// drawings): "; page 2 has no text (a scan or a drawing)", "; pages 2,
// 5, … (7 in all) have no text (scans or drawings)".
func noTextPages(c *inspect.Summary) string {
	pages := pageNumbers(c.NoText)
	switch {
	case c.NoTextPages == c.Pages:
		return "; no page has text (scans or drawings)"
	case c.NoTextPages == 1:
		return "; page " + pages + " has no text (a scan or a drawing)"
	case c.NoTextPages > len(c.NoText):
		return fmt.Sprintf("; pages %s, … (%d in all) have no text (scans or drawings)", pages, c.NoTextPages)
	}
	return "; pages " + pages + " have no text (scans or drawings)"
}

// archiveKind names an archive by its format: "ZIP archive", "XLSX
// workbook", "DOCX document".
func archiveKind(format string) string {
	switch format {
	case "":
		return "Archive"
	case "xlsx", "ods":
		return strings.ToUpper(format) + " workbook"
	case "docx", "odt":
		return strings.ToUpper(format) + " document"
	case "pptx", "odp":
		return strings.ToUpper(format) + " presentation"
	}
	return strings.ToUpper(format) + " archive"
}

// list joins the first n of items, "…" standing for the rest.
func list(items []string, n int) string {
	if len(items) > n {
		return strings.Join(items[:n], ", ") + ", …"
	}
	return strings.Join(items, ", ")
}

// excerpt is text on one line, cut to n characters at a word ("…" marks
// the cut).
func excerpt(text string, n int) string {
	t := strings.Join(strings.Fields(text), " ")
	if len([]rune(t)) <= n {
		return t
	}
	r := []rune(t)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
		return string(r)[:i] + " …"
	}
	return string(r) + "…"
}

// thousands renders n with comma separators: 12,034.
func thousands(n int64) string { return humanize.Count(n) }

// plural renders a count of things: "1 line", "12,034 lines", "3 entries".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "y") {
		thing = thing[:len(thing)-1] + "ie"
	}
	return thousands(n) + " " + thing + "s"
}
