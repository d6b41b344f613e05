package replicas

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
)

// TestPresignedURLs: a replica with store.s3.presign_urls hands the
// model a url that points at the object store, not at mcpx: it
// downloads the exact bytes with plain net/http, named and typed as the
// artifact, while mcpx serves nothing; once serve.url_ttl has passed the
// object store refuses it.
func TestPresignedURLs(t *testing.T) {
	s3 := s3test.Start(t)
	bucket := s3.Bucket(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	const ttl = 3 * time.Second
	writeJSON(t, filepath.Join(dir, "replica.json"), map[string]any{
		"mcpServers": map[string]any{
			"blobs": map[string]any{"command": self, "args": []string{"-test.run=^$"}, "env": map[string]string{upstreamEnv: "1"}},
			"spare": map[string]any{"command": self, "args": []string{"-test.run=^$"}, "env": map[string]string{upstreamEnv: "1"}}, // tools get their server's prefix
		},
		"store": map[string]any{"s3": map[string]any{"endpoint": s3.Endpoint, "bucket": bucket, "prefix": "mcpx", "path_style": true,
			"access_key": s3test.AccessKey, "secret_key": s3test.SecretKey, "presign_urls": true}},
		"serve": map[string]any{"url_secret": urlSecret, "tokens": tokens, "url_ttl": ttl.String()},
	})
	start(t, filepath.Join(dir, "replica.log"), addr, mcpx(t), "serve", "--config", filepath.Join(dir, "replica.json"), "--listen", addr)
	alice := newClient(t, "http://"+addr+"/mcp", "tok-alice")
	_, res := alice.do("tools/call", `{"name":"blobs_report","arguments":{"seed":7}}`)
	raw := strings.ReplaceAll(res.Get("result").Raw, `\u0026`, "&")
	i := strings.Index(raw, s3.Endpoint+"/"+bucket+"/mcpx/blobs/")
	if i < 0 || artifactURI.FindString(raw) == "" {
		t.Fatalf("no presigned URL of the bucket in the result: %.600s", raw)
	}
	u := raw[i:]
	u = u[:strings.IndexAny(u, `"\ `)]
	if strings.Contains(raw, "http://"+addr+"/artifacts/") {
		t.Errorf("the result also carries the gateway's URL: %.600s", raw)
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.Query().Get("X-Amz-Expires") != "3" {
		t.Fatalf("presigned URL %s: want X-Amz-Expires=3 (serve.url_ttl): %v", u, err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, report(7)) {
		t.Fatalf("GET the presigned URL: HTTP %d, %d bytes, want the %d of the report", resp.StatusCode, len(body), len(report(7)))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want the artifact's application/json", ct)
	}
	time.Sleep(ttl + 1100*time.Millisecond)
	resp, err = http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET the presigned URL after serve.url_ttl: HTTP %d, want 403", resp.StatusCode)
	}
}
