package web

// The UI at GET /: one static page (web/ui, embedded; plain HTML, CSS
// and JavaScript, no build step, nothing from another origin) that shows
// the caller's artifacts as they are stored (GET /events), previews them,
// browses resources and shows what each call kept out of the context.
//
// Access: the page itself carries no data, so it is served to anyone the
// loopback guard lets through; everything it shows comes from the API
// under the caller's identity. With tokens configured the page asks for
// one, keeps it in sessionStorage (this tab only, gone when it closes)
// and sends it as "Authorization: Bearer" on every fetch, /events
// included: the page reads the event stream with fetch() rather than
// EventSource, which cannot send headers. No token ever goes in a URL or
// a cookie. Previews and downloads use the artifacts' signed URLs (their
// own authority, expiring), so <img> and <iframe> need no token either.

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed ui
var uiFiles embed.FS

// uiCSP is the page's Content-Security-Policy: its own scripts and
// styles only, previews from its own origin (signed artifact URLs), blob:
// and data: images (resource previews), and nothing may frame it. An
// HTML artifact's preview (a srcdoc frame) inherits it: no script, no
// request to another origin.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"frame-src 'self' blob:; object-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// previewPlaceholder in index.html is replaced with Limits.PreviewBytes.
const previewPlaceholder = "{{PREVIEW_BYTES}}"

// serveUI answers the page.
func (a *API) serveUI(w http.ResponseWriter, _ *http.Request) {
	page, err := uiFiles.ReadFile("ui/index.html")
	if err != nil {
		http.Error(w, "ui missing", http.StatusInternalServerError)
		return
	}
	page = []byte(strings.Replace(string(page), previewPlaceholder, strconv.FormatInt(a.l.PreviewBytes, 10), 1))
	setUIHeaders(w.Header(), "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

// serveUIAsset answers the page's script and style sheet.
func serveUIAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "index.html" || strings.ContainsAny(name, `/\`) {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(uiFiles, path.Join("ui", name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	setUIHeaders(w.Header(), ct)
	_, _ = w.Write(b)
}

func setUIHeaders(h http.Header, contentType string) {
	h.Set("Content-Type", contentType)
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}
