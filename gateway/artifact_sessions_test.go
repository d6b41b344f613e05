package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
)

// tokenSession is one streamable-HTTP session of a bearer token.
type tokenSession struct {
	t          *testing.T
	url, token string
	sid        string
	next       int
}

// post sends one message and returns the JSON-RPC response (the body, or
// the last data line of an SSE stream).
func (s *tokenSession) post(body string) gjson.Result {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		last := ""
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				last = strings.TrimSpace(d)
			}
		}
		b = []byte(last)
	}
	return gjson.ParseBytes(b)
}

func (s *tokenSession) call(method, params string) gjson.Result {
	s.t.Helper()
	s.next++
	return s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.next, method, params))
}

// openTokenSession initializes a new session for token.
func openTokenSession(t *testing.T, url, token string) *tokenSession {
	t.Helper()
	s := &tokenSession{t: t, url: url, token: token}
	if r := s.post(initBody); r.Get("result.protocolVersion").String() == "" || s.sid == "" {
		t.Fatalf("initialize as %s: %s", token, r.Raw)
	}
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// A resources/read of mcpx://artifacts/ID worked only in the
// session that made it, so a one-shot client (each call its own session,
// as the inspector CLI is) could not read back what it was told about.
// An authenticated principal reads its artifacts from any of its
// sessions; another principal is told the artifact is unknown, exactly as
// for an id that does not exist.
func TestArtifactReadableAcrossSessionsOfOnePrincipal(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{Tokens: map[string]string{"tok-alice": "alice", "tok-alice-2": "alice", "tok-bob": "bob"}}))
	defer ts.Close()

	first := openTokenSession(t, ts.URL, "tok-alice")
	res := first.call("tools/call", toolCall("image", ""))
	uri := res.Get(`result.content.#(type=="resource_link").uri`).String()
	if !strings.HasPrefix(uri, engine.URIScheme) {
		t.Fatalf("no artifact link: %s", res.Raw)
	}
	read := `{"uri":"` + uri + `"}`

	// the same principal, a new session (another of its tokens too)
	for _, tok := range []string{"tok-alice", "tok-alice-2"} {
		again := openTokenSession(t, ts.URL, tok)
		if r := again.call("resources/read", read); r.Get("result.contents.0.blob").String() != pngB64 {
			t.Errorf("%s, new session: read back %s", tok, r.Raw)
		}
		if l := again.call("resources/list", `{}`); !strings.Contains(l.Get("result.resources.#.uri").Raw, uri) {
			t.Errorf("%s, new session: %s not listed: %s", tok, uri, l.Raw)
		}
	}

	// another principal: the same answer as for an id that does not exist
	bob := openTokenSession(t, ts.URL, "tok-bob")
	denied := bob.call("resources/read", read)
	unknown := bob.call("resources/read", `{"uri":"`+engine.URIScheme+`stub_000000000000"}`)
	if denied.Get("error").Raw == "" || denied.Get("error.code").Int() != unknown.Get("error.code").Int() {
		t.Fatalf("another principal read %s; an unknown id gives %s", denied.Raw, unknown.Raw)
	}
	scrub := func(r gjson.Result) string {
		return strings.NewReplacer(uri, "URI", engine.URIScheme+"stub_000000000000", "URI").Replace(r.Get("error.message").String())
	}
	if scrub(denied) != scrub(unknown) {
		t.Errorf("refused and unknown differ: %q vs %q", denied.Get("error.message"), unknown.Get("error.message"))
	}
	if l := bob.call("resources/list", `{}`); strings.Contains(l.Raw, uri) {
		t.Errorf("another principal lists %s: %s", uri, l.Raw)
	}
	if r := bob.call("tools/call", toolCall("echo", `{"v":"`+uri+`"}`)); r.Get("error").Raw == "" {
		t.Errorf("another principal passed the artifact as an argument: %s", r.Raw)
	}
}

// TestStdioOwnerReadsEarlierSessions: a one-shot stdio client (a new
// session per call, as the inspector CLI is) of `mcpx serve`/`wrap` reads
// back what an earlier session was told about, and lists it; an
// authenticated principal's artifact stays unknown to it. Without
// StdioReadsStore a stdio session reads its own artifacts only.
func TestStdioOwnerReadsEarlierSessions(t *testing.T) {
	t.Parallel()
	for _, owner := range []bool{true, false} {
		t.Run(fmt.Sprintf("StdioReadsStore=%v", owner), func(t *testing.T) {
			g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, StdioReadsStore: owner})
			first := connect(t, g)
			res := gjson.ParseBytes(first.call("tools/call", toolCall("image", "")))
			uri := res.Get(`result.content.#(type=="resource_link").uri`).String()
			if !strings.HasPrefix(uri, engine.URIScheme) {
				t.Fatalf("no artifact link: %s", res.Raw)
			}
			// an authenticated principal's artifact, in the same store
			ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{Tokens: map[string]string{"tok-alice": "alice"}}))
			defer ts.Close()
			alice := openTokenSession(t, ts.URL, "tok-alice")
			big := strings.Repeat("alice ", 5000)
			aliceRes := alice.call("tools/call", toolCall("echo", `{"v":"`+big+`"}`))
			aliceURI := regexp.MustCompile(`mcpx://artifacts/[A-Za-z0-9_]+`).FindString(aliceRes.Raw)
			if aliceURI == "" {
				t.Fatalf("alice's call stored nothing: %.300s", aliceRes.Raw)
			}

			second := connect(t, g)
			read := gjson.ParseBytes(second.call("resources/read", `{"uri":"`+uri+`"}`))
			listed := strings.Contains(gjson.GetBytes(second.call("resources/list", `{}`), "result.resources.#.uri").Raw, uri)
			if owner {
				if read.Get("result.contents.0.blob").String() != pngB64 || !listed {
					t.Errorf("a later stdio session: read %s, listed %v", read.Raw, listed)
				}
			} else if read.Get("error").Raw == "" || listed {
				t.Errorf("a later stdio session without StdioReadsStore: read %s, listed %v", read.Raw, listed)
			}
			if r := gjson.ParseBytes(second.call("resources/read", `{"uri":"`+aliceURI+`"}`)); r.Get("error").Raw == "" {
				t.Errorf("a stdio session read an authenticated principal's artifact: %.300s", r.Raw)
			}
		})
	}
}
