// Command tableau is the mcpx preset for Tableau MCP servers, a WASM guest
// built with sdk/wasm-guest/go (see README.md for the tools it covers and
// ../presets.go for the build commands).
package main

import (
	"strings"

	"github.com/tidwall/gjson"

	guest "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"
)

func init() { guest.Register(transform) }

func main() {}

// kind is what a tool returns, as far as this preset cares.
type kind int

const (
	other     kind = iota // left alone: lists, metadata, queries, unknown tools
	workbook              // a downloaded workbook (PDF, PowerPoint, .twbx)
	viewPDF               // a view or dashboard as PDF
	viewImage             // a view as PNG/SVG
	viewData              // CSV data or a crosstab export of a view
)

// classify maps a tool name to its kind. Names are compared lowercase with
// "-" as "_", so "get-view-image" (tableau/tableau-mcp) and
// "get_view_as_image" (community servers) both match.
func classify(tool string) kind {
	t := strings.ReplaceAll(strings.ToLower(tool), "-", "_")
	switch {
	case strings.HasPrefix(t, "list_"), strings.HasPrefix(t, "search"), strings.HasPrefix(t, "query_datasource"):
		return other
	case strings.Contains(t, "workbook") && (strings.Contains(t, "download") || strings.Contains(t, "export")):
		return workbook
	case strings.Contains(t, "pdf"):
		return viewPDF
	case strings.Contains(t, "image"), strings.Contains(t, "png"), strings.Contains(t, "screenshot"):
		return viewImage
	case strings.Contains(t, "csv"), strings.Contains(t, "crosstab"), strings.Contains(t, "view_data"), strings.Contains(t, "excel"):
		return viewData
	}
	return other
}

func transform(req *guest.Request) (*guest.Response, error) {
	k := classify(req.Tool())
	var out guest.Response
	if k == other {
		return &out, nil
	}
	name := subject(req, k)
	format := strings.ToLower(req.Payload().Get("format").String())
	if format == "" {
		format = strings.ToLower(req.Arguments().Get("format").String())
	}
	for _, c := range req.Candidates() {
		if c.Target == guest.Result && !strings.HasPrefix(c.Path, "content.") {
			continue
		}
		switch {
		case c.IsBinary() && k != viewData:
			out.Add(binaryRewrite(c, k, name, format))
		case k == viewData && (c.MIME == "text/plain" || c.IsBase64()):
			out.Add(dataRewrite(c, name))
		}
	}
	if len(out.Rewrites) > 0 {
		guest.Log(guest.LevelDebug, "tableau: "+req.Tool()+": "+itoa(len(out.Rewrites))+" rewrites for "+name)
	}
	return &out, nil
}

// subject names the workbook or view: a name field of the payload, else the
// id the call asked for.
func subject(req *guest.Request, k kind) string {
	p := req.Payload()
	keys := []string{"view_name", "viewName", "view.name", "name", "title", "workbook_name", "workbookName", "workbook.name"}
	if k == workbook {
		keys = []string{"workbook_name", "workbookName", "workbook.name", "name", "title"}
	}
	for _, key := range keys {
		if v := p.Get(key); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	args := req.Arguments()
	for _, key := range []string{"view_name", "workbook_name", "viewId", "view_id", "workbookId", "workbook_id", "luid", "id"} {
		if v := args.Get(key); v.Exists() && v.String() != "" {
			return v.String()
		}
	}
	return "unnamed"
}

func noun(k kind) string {
	if k == workbook {
		return "workbook"
	}
	return "view"
}

// binaryRewrite moves a file out: base64 in the payload becomes an artifact
// in place; an image or resource block of the result becomes a text block
// with the summary and a resource_link. The summary says what only this
// preset knows (which workbook or view); the engine appends what the bytes
// are, the artifact's id and URI and how to read further
// (sdk/wasm-guest/ABI.md, Summaries).
func binaryRewrite(c guest.Candidate, k kind, name, format string) guest.Rewrite {
	e := ext(c.MIME)
	if k == workbook && (e == "" || e == ".twbx") && format != "" {
		e = "." + safeName(format) // twb, twbx, pptx as the call asked
	}
	rw := guest.Rewrite{
		Path:     c.Path,
		Target:   c.Target,
		Action:   guest.Artifact,
		Encoding: guest.Base64,
		MIME:     c.MIME,
		Filename: safeName(name) + e,
		Summary:  "Downloaded " + noun(k) + " " + guest.QuoteName(name) + " as {kind}",
		Meta:     map[string]string{"preset": "tableau", noun(k): name},
	}
	if k == viewImage {
		rw.Summary = "Image of view " + guest.QuoteName(name)
	}
	if c.MIME == "application/octet-stream" {
		rw.MIME = ""
	}
	if c.Target == guest.Result {
		rw.InBlock()
	}
	return rw
}

// dataRewrite moves CSV out as a text artifact with a preview of its first
// rows.
func dataRewrite(c guest.Candidate, name string) guest.Rewrite {
	rw := guest.Rewrite{
		Path:     c.Path,
		Target:   c.Target,
		Action:   guest.Artifact,
		Encoding: guest.Text,
		MIME:     "text/csv",
		Filename: safeName(name) + ".csv",
		Keep:     600,
		Summary:  "Data of view " + guest.QuoteName(name),
		Meta:     map[string]string{"preset": "tableau", "view": name},
	}
	if c.IsBase64() {
		rw.Encoding = guest.Base64
		if c.IsBinary() && c.MIME != "application/octet-stream" {
			// An Excel crosstab, say.
			rw.MIME = c.MIME
			rw.Filename = safeName(name) + ext(c.MIME)
			rw.Summary = "Crosstab of view " + guest.QuoteName(name)
		}
		rw.Keep = 0
	}
	if c.Target == guest.Result {
		rw.InBlock()
	}
	return rw
}

func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '/' || r == '\\' || r == ':' || r == '{' || r == '}' || r < 0x20:
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "tableau"
	}
	return b.String()
}

func ext(mime string) string {
	switch mime {
	case "application/pdf":
		return ".pdf"
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/svg+xml":
		return ".svg"
	case "application/zip":
		return ".twbx"
	case "application/vnd.openxmlformats-officedocument.presentationml.presentation":
		return ".pptx"
	case "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":
		return ".xlsx"
	case "text/csv":
		return ".csv"
	}
	return ""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
