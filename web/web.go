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
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

// Query parameters of a download URL.
const (
	paramExpires = "exp"
	paramSession = "sid"
	paramSig     = "sig"
)

// DefaultTTL is how long a URL stays valid when SignerConfig.TTL is zero.
const DefaultTTL = 15 * time.Minute

// Errors of Verify; the handler answers 403 for each.
var (
	ErrBadSignature = errors.New("web: bad signature")
	ErrExpired      = errors.New("web: link expired")
)

// SignerConfig configures a Signer.
type SignerConfig struct {
	// BaseURL is where the HTTP surface is reachable ("http://host:port",
	// an optional path prefix kept). Required.
	BaseURL string
	// Secret is the HMAC key. Defaults to 32 random bytes: URLs then stop
	// working when the process restarts.
	Secret []byte
	// TTL is how long a URL stays valid. Defaults to DefaultTTL.
	TTL time.Duration
	// Now is the clock (tests). Defaults to time.Now.
	Now func() time.Time
}

// Signer makes and checks capability URLs for artifacts. It implements
// engine.Linker and is safe for concurrent use.
type Signer struct {
	base   *url.URL
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// NewSigner checks c and returns a Signer.
func NewSigner(c SignerConfig) (*Signer, error) {
	u, err := url.Parse(strings.TrimRight(c.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("web: base URL %q: want an absolute http(s) URL", c.BaseURL)
	}
	s := &Signer{base: u, secret: c.Secret, ttl: c.TTL, now: c.Now}
	if len(s.secret) == 0 {
		s.secret = make([]byte, 32)
		if _, err := rand.Read(s.secret); err != nil {
			return nil, fmt.Errorf("web: secret: %w", err)
		}
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// ArtifactURL returns a signed URL for ref, valid for the TTL and bound
// to ref's session. It implements engine.Linker.
func (s *Signer) ArtifactURL(ref engine.ArtifactRef) string {
	sid := ""
	if ref.Scope != nil {
		sid = ref.Scope.SessionID
	}
	return s.URL(ref.ID, sid)
}

// URL returns a signed URL for artifact id in session sid.
func (s *Signer) URL(id, sid string) string {
	exp := s.now().Add(s.ttl).Unix()
	q := url.Values{}
	q.Set(paramExpires, strconv.FormatInt(exp, 10))
	if sid != "" {
		q.Set(paramSession, sid)
	}
	q.Set(paramSig, s.sign(id, sid, exp))
	u := *s.base
	u.Path = u.Path + "/artifacts/" + url.PathEscape(id)
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Signer) sign(id, sid string, exp int64) string {
	m := hmac.New(sha256.New, s.secret)
	fmt.Fprintf(m, "v1\n%s\n%s\n%d", id, sid, exp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a download request's signature and expiry and returns the
// session the URL was issued for.
func (s *Signer) Verify(id string, q url.Values) (string, error) {
	exp, err := strconv.ParseInt(q.Get(paramExpires), 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: no expiry", ErrBadSignature)
	}
	sid := q.Get(paramSession)
	want := s.sign(id, sid, exp)
	if !hmac.Equal([]byte(want), []byte(q.Get(paramSig))) {
		return "", ErrBadSignature
	}
	if s.now().Unix() > exp {
		return "", fmt.Errorf("%w at %s", ErrExpired, time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return sid, nil
}

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
	ref, err := h.st.Stat(r.Context(), id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
			http.Error(w, "artifact not found", http.StatusNotFound)
			return
		}
		h.log.Warn("stat failed", "artifact", id, "error", err)
		http.Error(w, "store error", http.StatusInternalServerError)
		return
	}
	if sid != "" && !h.inSession(r, id, sid) {
		http.Error(w, "artifact not in this session", http.StatusForbidden)
		return
	}
	rc, ref, err := h.st.Get(r.Context(), id, nil)
	if err != nil {
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
	if rs, ok := rc.(io.ReadSeeker); ok {
		http.ServeContent(w, r, "", ref.Created, rs)
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
	h.Set("Content-Disposition", mime.FormatMediaType(disp, params))
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
