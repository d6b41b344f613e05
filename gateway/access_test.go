package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// authPost posts body to url with a bearer token and a session.
func authPost(t *testing.T, url, token, session, body string) (*http.Response, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, gjson.ParseBytes(b)
}

func newAuth(t *testing.T, c auth.Config) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(context.Background(), auth.Options{Config: c, Loopback: true, BaseURL: "http://127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// /mcp authenticates through auth: the principal's tenant and user are
// in the scope of what its calls store, another principal cannot use its
// session, and the per-tool limit answers -32029 with its retry delay.
func TestMCPAuthTenantScopeAndToolRateLimit(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Config{})
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, Engine: engine.Options{Store: st}})
	a := newAuth(t, auth.Config{
		Tokens: map[string]auth.Identity{"tok-a": {Tenant: "acme", User: "alice"}, "tok-b": {Tenant: "other", User: "alice"}},
		Limits: auth.Limits{RequestsPerSecond: -1, ToolCallsPerSecond: 0.001, ToolCallBurst: 1},
	})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{Auth: a}))
	defer ts.Close()

	resp, _ := authPost(t, ts.URL, "", "", initBody)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("no token: %d %q, want 401 naming the resource metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, _ := authPost(t, ts.URL, "wrong", "", initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d, want 401", resp.StatusCode)
	}
	resp, _ = authPost(t, ts.URL, "tok-a", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	// same user name, another tenant: not the session's principal
	if resp, _ := authPost(t, ts.URL, "tok-b", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another tenant's alice used the session: %d, want 403", resp.StatusCode)
	}
	_, r := authPost(t, ts.URL, "tok-a", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"big","arguments":{"bytes":40000}}}`)
	m := artifactURI.FindStringSubmatch(r.Raw)
	if m == nil {
		t.Fatalf("tools/call big stored nothing: %.300s", r.Raw)
	}
	ref, err := st.Stat(context.Background(), m[1])
	if err != nil || ref.Scope.TenantID != "acme" || ref.Scope.UserID != "alice" {
		t.Fatalf("artifact scope %+v (%v), want tenant acme, user alice", ref.Scope, err)
	}
	// the API's filter for acme/alice sees it; other/alice's does not
	if in, _ := st.InScope(context.Background(), m[1], (auth.Principal{Tenant: "acme", User: "alice"}).Scope()); !in {
		t.Error("acme/alice's API scope does not contain the gateway's artifact")
	}
	if in, _ := st.InScope(context.Background(), m[1], (auth.Principal{Tenant: "other", User: "alice"}).Scope()); in {
		t.Error("other/alice's API scope contains acme's artifact")
	}
	_, r = authPost(t, ts.URL, "tok-a", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"big","arguments":{"bytes":40000}}}`)
	if r.Get("error.code").Int() != auth.JSONRPCRateLimited || r.Get("error.data.limit").String() != "tool_calls_per_second" || r.Get("error.data.retry_after_seconds").Int() < 1 {
		t.Errorf("second call past the burst: %s, want -32029 with limit and retry_after_seconds", r.Raw)
	}
	// another tool has its own bucket
	if _, r := authPost(t, ts.URL, "tok-a", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"v":"x"}}}`); r.Get("error").Exists() {
		t.Errorf("echo after big: %s", r.Raw)
	}
}

// The principal's request rate limit answers 429 with Retry-After on
// the transport.
func TestMCPRequestRateLimit429(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}})
	a := newAuth(t, auth.Config{
		Tokens: map[string]auth.Identity{"tok-a": {User: "alice"}},
		Limits: auth.Limits{RequestsPerSecond: 0.001, RequestBurst: 1},
	})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{Auth: a}))
	defer ts.Close()
	if resp, _ := authPost(t, ts.URL, "tok-a", "", initBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	resp, _ := authPost(t, ts.URL, "tok-a", "", initBody)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second request: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestServerResourcesBrowser(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"a": resourceStub(t, "a"), "plain": stubServer(t)}})
	g.rooms.Ups.AwaitStart(context.Background())
	ctx := context.Background()
	list, err := g.ServerResources(ctx, "a", "")
	if err != nil || gjson.GetBytes(list, "resources.0.uri").String() != "stub://a/r1" || gjson.GetBytes(list, "nextCursor").String() != "p2" {
		t.Fatalf("ServerResources: %s, %v", list, err)
	}
	if next, err := g.ServerResources(ctx, "a", "p2"); err != nil || gjson.GetBytes(next, "resources.0.uri").String() != "stub://a/r2" {
		t.Fatalf("page 2: %s, %v", next, err)
	}
	read, err := g.ReadServerResource(ctx, "a", "stub://a/r1")
	if err != nil || gjson.GetBytes(read, "contents.0.text").String() != "from a: stub://a/r1" {
		t.Fatalf("ReadServerResource: %s, %v", read, err)
	}
	for _, server := range []string{"nope", "plain"} {
		if _, err := g.ServerResources(ctx, server, ""); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("ServerResources(%s): %v, want ErrUnknownServer", server, err)
		}
	}
}

// An upstream's resources/updated reaches OnResourceUpdated once per
// subscribed principal.
func TestResourceUpdatedPublished(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []observe.ResourceUpdate
	)
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"a": resourceStub(t, "a")}, OnResourceUpdated: func(u observe.ResourceUpdate) {
		mu.Lock()
		got = append(got, u)
		mu.Unlock()
	}})
	a := newAuth(t, auth.Config{Tokens: map[string]auth.Identity{"tok-a": {Tenant: "acme", User: "alice"}}})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{Auth: a}))
	defer ts.Close()
	resp, _ := authPost(t, ts.URL, "tok-a", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if _, r := authPost(t, ts.URL, "tok-a", sid, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"stub://a/r1"}}`); r.Get("error").Exists() {
		t.Fatalf("subscribe: %s", r.Raw)
	}
	authPost(t, ts.URL, "tok-a", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"touch","arguments":{"uri":"stub://a/r1"}}}`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	want := observe.ResourceUpdate{Server: "a", URI: "stub://a/r1", Scope: store.Scope{TenantID: "acme", UserID: "alice"}}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("updates %+v, want [%+v]", got, want)
	}
}

// TestMCPHostOnLoopback: on a loopback listener /mcp refuses a Host that
// is not a loopback name or an allowed host (a DNS-rebinding page reaches
// 127.0.0.1 under its own name) with the 403 the API answers, before it
// reads the body; a listener that is not loopback checks no Host.
func TestMCPHostOnLoopback(t *testing.T) {
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}})
	loop := httptest.NewServer(g.HTTPHandler(HTTPOptions{Auth: newAuth(t, auth.Config{AllowedHosts: []string{"mcpx.internal:8080"}})}))
	defer loop.Close()
	post := func(url, host string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, tc := range []struct {
		host string
		code int
	}{
		{"evil.com:18080", http.StatusForbidden},
		{"attacker.test", http.StatusForbidden},
		{"localhost.evil.com", http.StatusForbidden},
		{strings.TrimPrefix(loop.URL, "http://"), http.StatusOK},
		{"localhost:18080", http.StatusOK},
		{"[::1]:18080", http.StatusOK},
		{"mcpx.internal:8080", http.StatusOK},
	} {
		code, body := post(loop.URL, tc.host)
		if code != tc.code {
			t.Errorf("Host %s: status %d (%.80s), want %d", tc.host, code, body, tc.code)
		}
		if code == http.StatusForbidden && body != "forbidden: Host is not a loopback name (DNS rebinding?)" {
			t.Errorf("Host %s: body %q, want the API's refusal", tc.host, body)
		}
	}
	a, err := auth.New(context.Background(), auth.Options{Config: auth.Config{Tokens: map[string]auth.Identity{"tok": {User: "u"}}}, BaseURL: "http://mcpx.example"})
	if err != nil {
		t.Fatal(err)
	}
	public := httptest.NewServer(g.HTTPHandler(HTTPOptions{Auth: a}))
	defer public.Close()
	if resp, _ := authPost(t, public.URL, "tok", "", initBody); resp.StatusCode != http.StatusOK {
		t.Errorf("a listener that is not loopback, with a token: %d, want 200", resp.StatusCode)
	}
}
