package web

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func TestDownload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	body := []byte("%PDF-1.4 test bytes")
	ref, err := st.Put(ctx, bytes.NewReader(body), store.PutOptions{Namespace: "t", MIMEType: "application/pdf", Filename: "a.pdf", Scope: store.Scope{SessionID: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	signer, err := NewSigner(SignerConfig{BaseURL: "http://127.0.0.1:1", Secret: []byte("k"), TTL: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /artifacts/{id}", NewHandler(st, signer, nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(raw string) (int, []byte, http.Header) {
		u, _ := url.Parse(raw)
		resp, err := http.Get(srv.URL + u.RequestURI())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header
	}
	good := signer.ArtifactURL(engine.RefFromStore(ref))
	if code, b, h := get(good); code != 200 || !bytes.Equal(b, body) || h.Get("Content-Type") != "application/pdf" {
		t.Fatalf("good link: %d %q %v", code, b, h)
	}
	for name, u := range map[string]string{
		"tampered id":      strings.Replace(good, ref.ID, "t_000000000000", 1),
		"other session":    strings.Replace(good, "sid=s1", "sid=s2", 1),
		"no signature":     strings.Split(good, "&sig=")[0],
		"wrong session":    signer.URL(ref.ID, "s2"),
		"forged signature": good[:len(good)-3] + "abc",
	} {
		if code, _, _ := get(u); code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, code)
		}
	}
	now = now.Add(2 * time.Minute)
	if code, b, _ := get(good); code != http.StatusForbidden || !strings.Contains(string(b), "expired") {
		t.Errorf("expired link: %d %s", code, b)
	}
}

func TestNewSignerRejectsBadBase(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "ftp://x", "/relative", "http://"} {
		if _, err := NewSigner(SignerConfig{BaseURL: base}); err == nil {
			t.Errorf("%q: no error", base)
		}
	}
}

// A downloaded HTML artifact rendered on the gateway's own
// origin. Active types are attachments, every download is sandboxed.
func TestActiveTypesNeverRender(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	signer, err := NewSigner(SignerConfig{BaseURL: "http://127.0.0.1:1", Secret: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /artifacts/{id}", NewHandler(st, signer, nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		mime, body, filename string
		inline               bool
	}{
		{"text/html", `<script>fetch("/mcp",{method:"POST"})</script>`, "", false},
		{"text/html; charset=utf-8", `<h1>x</h1>`, "", false},
		{"image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`, "", false},
		{"application/xhtml+xml", `<html xmlns="http://www.w3.org/1999/xhtml"/>`, "", false},
		{"text/xml", `<x/>`, "", false},
		{"application/javascript", `alert(1)`, "", false},
		{"text/css", `body{}`, "", false},
		{"", `<script>alert(1)</script>`, "", true}, // stored without a type: octet-stream
		{"image/png", "\x89PNG\r\n\x1a\n", "", true},
		{"application/pdf", "%PDF-1.4", "", true},
		// A passive type with a file name was an attachment,
		// though docs/operations.md says passive types show inline.
		{"image/png", "\x89PNG\r\n\x1a\n named", "chart.png", true},
		{"image/jpeg", "\xff\xd8\xff named", "photo.jpg", true},
		{"image/gif", "GIF89a named", "anim.gif", true},
		{"image/webp", "RIFF....WEBP named", "pic.webp", true},
		{"application/pdf", "%PDF-1.4 named", "report.pdf", true},
		{"text/plain; charset=utf-8", "hello named", "notes.txt", true},
		{"image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(2)"/>`, "logo.svg", false},
		{"text/html", `<script>alert(2)</script>`, "page.html", false},
		{"application/octet-stream", `<script>alert(3)</script>`, "blob.html", false},
	} {
		ref, err := st.Put(ctx, strings.NewReader(tc.body), store.PutOptions{Namespace: "t", MIMEType: tc.mime, Filename: tc.filename})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(signer.URL(ref.ID, ""))
		resp, err := http.Get(srv.URL + u.RequestURI())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		disp := h.Get("Content-Disposition")
		if resp.StatusCode != 200 || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != "sandbox; default-src 'none'" {
			t.Errorf("%s: %d %v", tc.mime, resp.StatusCode, h)
		}
		if tc.inline != strings.HasPrefix(disp, "inline") || !tc.inline && !strings.HasPrefix(disp, "attachment") {
			t.Errorf("%s %q: Content-Disposition %q", tc.mime, tc.filename, disp)
		}
		if tc.filename != "" && !strings.Contains(disp, "filename="+tc.filename) {
			t.Errorf("%s %q: Content-Disposition %q lacks the file name", tc.mime, tc.filename, disp)
		}
	}
}
