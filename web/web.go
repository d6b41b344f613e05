// Package web is mcpx's HTTP surface for artifact bytes: GET
// /artifacts/{id} behind signed, expiring capability URLs (HMAC-SHA256),
// scoped to the session the artifact was made in (docs/design.md, "The store's promises"). A Signer
// is the engine's Linker: with one, every ArtifactRef carries a "url".
//
//	signer, _ := web.NewSigner(web.SignerConfig{BaseURL: "http://127.0.0.1:8080"})
//	eng, _ := engine.New(engine.Options{Store: st, Linker: signer})
//	mux.Handle("GET /artifacts/{id}", web.NewHandler(st, signer, log))
package web

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

var _ engine.Linker = (*Signer)(nil)

// Handler serves GET /artifacts/{id}.
type Handler struct {
	st     store.Store
	signer *Signer
	log    hclog.Logger
}

// NewHandler returns the download handler. Mount it at
// "GET /artifacts/{id}" (it reads the id from the path's last segment).
func NewHandler(st store.Store, signer *Signer, log hclog.Logger) *Handler {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Handler{st: st, signer: signer, log: log.Named("web")}
}

// ServeHTTP streams the artifact's exact bytes with its MIME type, after
// checking the URL's signature, its expiry and the artifact's session.
// Range requests are honoured.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	id := r.PathValue("id")
	if id == "" {
		id = r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	}
	sid, err := h.signer.Verify(id, r.URL.Query())
	if err != nil {
		h.log.Info("download refused", "artifact", id, "error", err)
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if sid != "" && !h.inSession(r, id, sid) {
		http.Error(w, "artifact not in this session", http.StatusForbidden)
		return
	}
	h.serveBytes(w, r, id)
}

// serveBytes streams artifact id: its exact bytes with its MIME type and
// the safety headers; Range requests are honoured.
func (h *Handler) serveBytes(w http.ResponseWriter, r *http.Request, id string) {
	rc, ref, err := h.st.Get(r.Context(), id, nil)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
			http.Error(w, "artifact not found", http.StatusNotFound)
			return
		}
		h.log.Warn("get failed", "artifact", id, "error", err)
		http.Error(w, "store error", http.StatusInternalServerError)
		return
	}
	defer rc.Close()
	ct := ref.MIMEType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	setSafetyHeaders(w.Header(), ct, ref.Filename)
	w.Header().Set("Cache-Control", "private, max-age=300")
	w.Header().Set("ETag", `"`+ref.SHA256+`"`)
	// No Last-Modified: the ref's creation is when its first owner put
	// the bytes, not for every reader to learn; the ETag (the sha256)
	// answers conditional requests.
	if of, ok := rc.(osFiler); ok {
		if f := of.OSFile(); f != nil {
			// a whole blob file: the kernel copies it (sendfile)
			http.ServeContent(w, r, "", time.Time{}, f)
			return
		}
	}
	if rs, ok := rc.(io.ReadSeeker); ok {
		http.ServeContent(w, r, "", time.Time{}, rs)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(ref.SizeBytes, 10))
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, rc); err != nil {
		h.log.Debug("download interrupted", "artifact", id, "error", err)
	}
}

// osFiler is a store reader that can hand over its open file (fsstore).
type osFiler interface{ OSFile() *os.File }

// inSession reports whether artifact id was stored under session sid.
func (h *Handler) inSession(r *http.Request, id, sid string) bool {
	in, err := h.st.InScope(r.Context(), id, store.Scope{SessionID: sid})
	return err == nil && in
}

// ContentSecurityPolicy is sent with every download: the bytes are
// sandboxed (a unique origin, no scripts, no forms) and may load
// nothing, so even a document a browser renders cannot act on the
// gateway's origin, which passes the MCP endpoint's Origin check.
const ContentSecurityPolicy = "sandbox; default-src 'none'"

// setSafetyHeaders keeps an artifact from running on the gateway's
// origin: nosniff and the sandboxing CSP always, and "attachment" (a
// download, never rendered) for every type that is not known to be
// passive. Passive types (images other than SVG, audio, video, PDF, plain
// text, JSON) are shown inline, with their file name (if any) as the name
// a browser saves them under: "inline; filename=chart.png". Untyped
// bytes (application/octet-stream) with a file name are an attachment:
// nothing renders them, and a download keeps the name.
func setSafetyHeaders(h http.Header, contentType, filename string) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	disp := "inline"
	mt, _, _ := mime.ParseMediaType(contentType)
	if !InlineSafe(contentType) || (filename != "" && mt == "application/octet-stream") {
		disp = "attachment"
	}
	params := map[string]string{}
	if filename != "" {
		params["filename"] = filename
	}
	v := mime.FormatMediaType(disp, params)
	if v == "" {
		// a name FormatMediaType cannot write (control characters): no
		// name rather than no disposition, which would render inline
		v = disp
	}
	h.Set("Content-Disposition", v)
}

// InlineSafe reports whether a browser may render contentType on the
// gateway's origin: only types that cannot run script. HTML, SVG, XML,
// JavaScript, CSS and every type not listed are not.
func InlineSafe(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case mt == "image/svg+xml":
		return false
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"):
		return true
	}
	switch mt {
	case "application/pdf", "text/plain", "application/json", "text/csv", "application/octet-stream":
		return true
	}
	return false
}
