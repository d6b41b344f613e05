package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// jwksServer serves the public half of key as a JWKS with kid "k1".
func jwksServer(t *testing.T, key *rsa.PrivateKey) *httptest.Server {
	t.Helper()
	pub := key.Public().(*rsa.PublicKey)
	set := map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	testIssuer   = "https://idp.test/"
	testAudience = "https://mcpx.test/"
)

func signRS(t *testing.T, key *rsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func goodClaims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": "alice", "org": "acme",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func newTestAuth(t *testing.T, c Config, loopback bool) *Authenticator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a, err := New(ctx, Options{Config: c, Loopback: loopback, BaseURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// whoami answers the principal's key.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, _ := FromContext(r.Context())
	_, _ = w.Write([]byte(p.Key()))
})

func do(t *testing.T, h http.Handler, mod func(*http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", "http://127.0.0.1:9/x", nil)
	if mod != nil {
		mod(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func TestJWTVerification(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	srv := jwksServer(t, key)
	a := newTestAuth(t, Config{JWT: &JWTConfig{JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience, TenantClaim: "org"}}, false)
	h := a.Middleware(whoami)

	if w := do(t, h, bearer(signRS(t, key, "k1", goodClaims()))); w.Code != 200 || w.Body.String() != "acme/alice" {
		t.Fatalf("good token: %d %q", w.Code, w.Body)
	}
	with := func(k string, v any) jwt.MapClaims { c := goodClaims(); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := goodClaims(); delete(c, k); return c }
	good := signRS(t, key, "k1", goodClaims())
	parts := strings.Split(good, ".")
	tamperedClaims := goodClaims()
	tamperedClaims["sub"] = "mallory"
	tb, _ := json.Marshal(tamperedClaims)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, goodClaims())
	hs.Header["kid"] = "k1"
	hsTok, _ := hs.SignedString([]byte("guess"))
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec := jwt.NewWithClaims(jwt.SigningMethodES256, goodClaims())
	ec.Header["kid"] = "k1"
	ecTok, _ := ec.SignedString(ecKey)
	for name, tok := range map[string]string{
		"expired":           signRS(t, key, "k1", with("exp", time.Now().Add(-time.Hour).Unix())),
		"not yet valid":     signRS(t, key, "k1", with("nbf", time.Now().Add(time.Hour).Unix())),
		"no expiry":         signRS(t, key, "k1", without("exp")),
		"wrong audience":    signRS(t, key, "k1", with("aud", "https://other.test/")),
		"wrong issuer":      signRS(t, key, "k1", with("iss", "https://evil.test/")),
		"wrong key":         signRS(t, other, "k1", goodClaims()),
		"unknown kid":       signRS(t, other, "k9", goodClaims()),
		"tampered payload":  parts[0] + "." + base64.RawURLEncoding.EncodeToString(tb) + "." + parts[2],
		"tampered sig":      parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-4] + "AAAA",
		"alg none":          base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k1"}`)) + "." + parts[1] + ".",
		"hs256 confusion":   hsTok,
		"es256 wrong key":   ecTok,
		"no user":           signRS(t, key, "k1", without("sub")),
		"no tenant":         signRS(t, key, "k1", without("org")),
		"static lookalike":  "not-a-token",
		"garbage three dot": "a.b.c",
	} {
		w := do(t, h, bearer(tok))
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, w.Code)
			continue
		}
		if ch := w.Header().Get("WWW-Authenticate"); !strings.Contains(ch, `resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource"`) || !strings.Contains(ch, `error="invalid_token"`) {
			t.Errorf("%s: WWW-Authenticate %q", name, ch)
		}
	}
}

func TestStaticTokens(t *testing.T) {
	a := newTestAuth(t, Config{Tokens: map[string]Identity{"tok-a": {Tenant: "acme", User: "alice"}, "tok-b": {User: "bob"}}}, true)
	h := a.Middleware(whoami)
	for name, tc := range map[string]struct {
		mod  func(*http.Request)
		code int
		body string
	}{
		"alice":          {bearer("tok-a"), 200, "acme/alice"},
		"bob":            {bearer("tok-b"), 200, "/bob"},
		"missing":        {nil, 401, ""},
		"wrong":          {bearer("tok-c"), 401, ""},
		"prefix":         {bearer("tok-"), 401, ""},
		"basic scheme":   {func(r *http.Request) { r.Header.Set("Authorization", "Basic dG9rLWE=") }, 401, ""},
		"empty bearer":   {func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, 401, ""},
		"lowercase ok":   {func(r *http.Request) { r.Header.Set("Authorization", "bearer tok-a") }, 200, "acme/alice"},
		"token in query": {func(r *http.Request) { r.URL.RawQuery = "access_token=tok-a" }, 401, ""},
	} {
		w := do(t, h, tc.mod)
		if w.Code != tc.code || (tc.body != "" && w.Body.String() != tc.body) {
			t.Errorf("%s: %d %q, want %d %q", name, w.Code, w.Body, tc.code, tc.body)
		}
		if w.Code == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), `Bearer resource_metadata="`) {
			t.Errorf("%s: WWW-Authenticate %q", name, w.Header().Get("WWW-Authenticate"))
		}
	}
}

func TestLocalUserOnlyOnLoopback(t *testing.T) {
	if w := do(t, newTestAuth(t, Config{}, true).Middleware(whoami), nil); w.Code != 200 || w.Body.String() != "local" {
		t.Errorf("loopback without tokens: %d %q, want the local user", w.Code, w.Body)
	}
	w := do(t, newTestAuth(t, Config{}, false).Middleware(whoami), nil)
	if w.Code != http.StatusForbidden {
		t.Errorf("non-loopback without tokens: %d, want 403", w.Code)
	}
}

func TestRebindingGuard(t *testing.T) {
	a := newTestAuth(t, Config{AllowedHosts: []string{"mcpx.internal:8080"}, AllowedOrigins: []string{"https://ui.example"}}, true)
	h := a.Middleware(whoami)
	for name, tc := range map[string]struct {
		host, origin string
		code         int
	}{
		"loopback ip":          {"127.0.0.1:8080", "", 200},
		"localhost":            {"localhost:8080", "http://localhost:3000", 200},
		"ipv6 loopback":        {"[::1]:8080", "http://[::1]:8080", 200},
		"allowed host":         {"mcpx.internal:8080", "", 200},
		"allowed origin":       {"127.0.0.1:8080", "https://ui.example", 200},
		"rebound host":         {"evil.example:8080", "", 403},
		"rebound host no port": {"attacker.test", "", 403},
		"cross-site origin":    {"127.0.0.1:8080", "https://evil.example", 403},
		"null origin":          {"127.0.0.1:8080", "null", 403},
		"origin lookalike":     {"127.0.0.1:8080", "http://localhost.evil.example", 403},
	} {
		w := do(t, h, func(r *http.Request) {
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
		})
		if w.Code != tc.code {
			t.Errorf("%s: %d, want %d", name, w.Code, tc.code)
		}
	}
	// not loopback: no Host check (tokens protect it)
	b := newTestAuth(t, Config{Tokens: map[string]Identity{"t": {User: "u"}}}, false)
	if w := do(t, b.Middleware(whoami), func(r *http.Request) { r.Host = "mcpx.example"; bearer("t")(r) }); w.Code != 200 {
		t.Errorf("public listener with a token: %d", w.Code)
	}
}

// TestRateLimits runs in a synctest bubble: its clock moves only when
// every goroutine in it waits, so a loaded machine that takes a second
// between two requests no longer refills a bucket the test counts on.
func TestRateLimits(t *testing.T) {
	synctest.Test(t, testRateLimits)
}

func testRateLimits(t *testing.T) {
	a := newTestAuth(t, Config{Tokens: map[string]Identity{"ta": {User: "a"}, "tb": {User: "b"}},
		Limits: Limits{RequestsPerSecond: 1, RequestBurst: 3, ToolCallsPerSecond: 0.5, ToolCallBurst: 1}}, true)
	h := a.Middleware(whoami)
	for i := range 3 {
		if w := do(t, h, bearer("ta")); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := do(t, h, bearer("ta"))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("4th request: %d Retry-After %q, want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	if w := do(t, h, bearer("tb")); w.Code != 200 {
		t.Errorf("another principal is limited too: %d", w.Code)
	}
	lim := a.Limiter()
	p := Principal{User: "a"}
	if err := lim.AllowToolCall(p, "srv", "t1"); err != nil {
		t.Fatal(err)
	}
	err := lim.AllowToolCall(p, "srv", "t1")
	var rl *RateLimitError
	if !errors.Is(err, ErrRateLimited) || !errors.As(err, &rl) || rl.Limit != "tool_calls_per_second" || rl.RetryAfterSeconds() != 2 || rl.Data()["retry_after_seconds"] != 2 {
		t.Fatalf("second tool call: %v", err)
	}
	if err := lim.AllowToolCall(p, "srv", "t2"); err != nil {
		t.Errorf("another tool is limited too: %v", err)
	}
	// The local user is limited only by rates set explicitly.
	local := Principal{Local: true}
	byDefault := NewRateLimiter(Limits{})
	for range 1000 {
		if err := byDefault.AllowRequest(local); err != nil {
			t.Fatalf("the local user is limited by the default request rate: %v", err)
		}
		if err := byDefault.AllowToolCall(local, "srv", "t"); err != nil {
			t.Fatalf("the local user is limited by the default tool rate: %v", err)
		}
	}
	if err := byDefault.AllowToolCall(p, "srv", "t"); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		_ = byDefault.AllowToolCall(p, "srv", "t")
	}
	if err := byDefault.AllowToolCall(p, "srv", "t"); !errors.Is(err, ErrRateLimited) {
		t.Errorf("an authenticated principal is not limited by the defaults: %v", err)
	}
	explicit := NewRateLimiter(Limits{ToolCallsPerSecond: 0.001, ToolCallBurst: 1})
	_ = explicit.AllowToolCall(local, "srv", "t")
	if err := explicit.AllowToolCall(local, "srv", "t"); !errors.Is(err, ErrRateLimited) {
		t.Errorf("a tool rate set explicitly does not limit the local user: %v", err)
	}
	off := NewRateLimiter(Limits{RequestsPerSecond: -1})
	for range 1000 {
		if err := off.AllowRequest(p); err != nil {
			t.Fatal("a rate of -1 limits")
		}
	}
	small := NewRateLimiter(Limits{MaxLimiters: 2})
	for _, u := range []string{"x", "y", "z"} {
		_ = small.AllowRequest(Principal{User: u})
	}
	if small.lru.Len() != 2 {
		t.Errorf("limiters kept: %d, want 2", small.lru.Len())
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	a := newTestAuth(t, Config{Resource: "https://mcpx.test", Tokens: map[string]Identity{"t": {User: "u"}}, AuthorizationServers: []string{"https://idp.test/"}}, false)
	w := do(t, a.MetadataHandler(), nil)
	var m Metadata
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || w.Code != 200 {
		t.Fatalf("%d %s %v", w.Code, w.Body, err)
	}
	if m.Resource != "https://mcpx.test" || len(m.AuthorizationServers) != 1 || m.BearerMethodsSupported[0] != "header" {
		t.Errorf("metadata %+v", m)
	}
	if w := do(t, a.Middleware(whoami), nil); w.Header().Get("WWW-Authenticate") != `Bearer resource_metadata="https://mcpx.test/.well-known/oauth-protected-resource"` {
		t.Errorf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
	}
}

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"empty token":    {Tokens: map[string]Identity{"": {User: "u"}}},
		"empty user":     {Tokens: map[string]Identity{"t": {}}},
		"no issuer":      {JWT: &JWTConfig{JWKSURL: "https://x/jwks", Audience: "a"}},
		"no audience":    {JWT: &JWTConfig{JWKSURL: "https://x/jwks", Issuer: "i"}},
		"bad jwks":       {JWT: &JWTConfig{JWKSURL: "file:///etc/jwks", Issuer: "i", Audience: "a"}},
		"hs algorithm":   {JWT: &JWTConfig{JWKSURL: "https://x/jwks", Issuer: "i", Audience: "a", Algorithms: []string{"HS256"}}},
		"bad resource":   {Resource: "/relative"},
		"negative burst": {Limits: Limits{RequestBurst: -1}},
		"negative jwks":  {JWT: &JWTConfig{JWKSURL: "https://x/jwks", Issuer: "i", Audience: "a", MaxJWKSBytes: -1}},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	j := (JWTConfig{}).WithDefaults()
	if j.MaxJWKSBytes != 1<<20 || time.Duration(j.Refresh) != time.Hour || time.Duration(j.Leeway) != 30*time.Second || j.UserClaim != "sub" || len(j.Algorithms) != 10 {
		t.Errorf("JWTConfig defaults %+v", j)
	}
}
