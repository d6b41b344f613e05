package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/internal/syncbuf"
)

// countingReads counts the body bytes an HTTP client reads.
type countingReads struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingReads) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = countedBody{resp.Body, c.n}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestJWKSBounded: a JWKS response over jwt.max_jwks_bytes fails the
// refresh with a logged error naming the limit, having read no more than
// the limit and a buffer; the keys fetched before stay in use; and tokens
// with unknown "kid"s make at most one refetch per
// JWKSUnknownKIDInterval, however many arrive.
func TestJWKSBounded(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	pub := key.Public().(*rsa.PublicKey)
	good, _ := json.Marshal(map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
	const limit = 64 << 10
	const huge = 64 << 20 // what an unbounded client would read whole
	var fetches atomic.Int64
	var bomb atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if !bomb.Load() {
			_, _ = w.Write(good)
			return
		}
		// one key whose modulus never ends
		_, _ = io.WriteString(w, `{"keys":[{"kty":"RSA","kid":"k2","alg":"RS256","e":"AQAB","n":"`)
		chunk := bytes.Repeat([]byte("A"), 32<<10)
		for sent := 0; sent < huge; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}]}`)
	}))
	defer srv.Close()
	var read atomic.Int64
	var logs syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := New(ctx, Options{
		Config:     Config{JWT: &JWTConfig{JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience, MaxJWKSBytes: limit}},
		BaseURL:    "http://127.0.0.1:9",
		HTTPClient: &http.Client{Transport: countingReads{http.DefaultTransport, &read}},
		Logger:     hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Middleware(whoami)
	k1 := signRS(t, key, "k1", goodClaims())
	if w := do(t, h, bearer(k1)); w.Code != 200 {
		t.Fatalf("token of the first key set: %d %s", w.Code, w.Body)
	}

	bomb.Store(true)
	read.Store(0)
	if w := do(t, h, bearer(signRS(t, other, "k2", goodClaims()))); w.Code != http.StatusUnauthorized {
		t.Fatalf("unknown kid while the JWKS is over its limit: %d, want 401", w.Code)
	}
	if n := read.Load(); n > limit+1 {
		t.Errorf("read %d bytes of a %d-byte JWKS with max_jwks_bytes %d", n, huge, limit)
	}
	want := fmt.Sprintf("[WARN]  auth: fetching the JWKS failed: the response is larger than jwt.max_jwks_bytes (raise it if the key set is that large); the keys fetched before stay in use: url=%s max_jwks_bytes=%d\n", srv.URL, limit)
	if l := logs.String(); !strings.Contains(l, want) {
		t.Errorf("log %q\nwant it to say %q", l, want)
	}
	if w := do(t, h, bearer(k1)); w.Code != 200 {
		t.Errorf("a token of the keys fetched before, after the failed refresh: %d %s", w.Code, w.Body)
	}

	// A flood of unknown kids: the refetch above spent the interval's one.
	before := fetches.Load()
	for i := range 20 {
		if w := do(t, h, bearer(signRS(t, other, fmt.Sprintf("x%d", i), goodClaims()))); w.Code != http.StatusUnauthorized {
			t.Fatalf("unknown kid %d: %d", i, w.Code)
		}
	}
	if n := fetches.Load() - before; n != 0 {
		t.Errorf("20 unknown kids within %s made %d fetches, want none", JWKSUnknownKIDInterval, n)
	}
}
