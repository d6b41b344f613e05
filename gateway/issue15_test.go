package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/internal/redact"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/store"
)

// Issue 15: a parse error over HTTP answered with the id guessed from the
// broken body; JSON-RPC 2.0 wants null when the id cannot be determined.
func TestHTTPParseErrorHasNullID(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	defer ts.Close()
	for _, body := range []string{`{"jsonrpc":"2.0","id":7,"method":`, `{"jsonrpc":"2.0","id":"seven","method":"ping","params":{`} {
		resp, r := httpPost(t, ts.URL, "", body)
		if resp.StatusCode != http.StatusBadRequest || r.Get("error.code").Int() != jsonrpc.CodeParseError || r.Get("id").Raw != "null" {
			t.Errorf("%s: %d %s, want 400 with -32700 and id null", body, resp.StatusCode, r.Raw)
		}
	}
}

// leakyUpstream is a Streamable HTTP MCP server without sessions whose
// tool "leak" fails with a JSON-RPC error that quotes secret in each of
// the forms a message may carry it in.
func leakyUpstream(secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		m := gjson.ParseBytes(b)
		id := m.Get("id").Raw
		if id == "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch m.Get("method").String() {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"leaky","version":"1"}}}`, id)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"leak","inputSchema":{"type":"object"}}]}}`, id)
		case "tools/call":
			jsonForm, _ := json.Marshal(secret)
			msg := fmt.Sprintf("denied: GET https://api.example/v1/%s?key=%s with body {\"key\":%s}", url.PathEscape(secret), url.QueryEscape(secret), jsonForm)
			e, _ := json.Marshal(map[string]any{"code": -32001, "message": msg, "data": map[string]string{"sent": secret}})
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":%s}`, id, e)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id)
		}
	})
}

// secretForms are the forms of secret that must not reach a client or a
// log line: raw, JSON-escaped, percent-encoded for a path and a query.
func secretForms(secret string) map[string]string {
	j, _ := json.Marshal(secret)
	return map[string]string{
		"raw":          secret,
		"json":         string(j[1 : len(j)-1]),
		"query escape": url.QueryEscape(secret),
		"path escape":  url.PathEscape(secret),
	}
}

// Issue 15: a secret with a quote, a backslash or a space reached clients
// and logs in its escaped forms. An upstream's error that quotes it (its
// message keeps its text for the client) and a connect error of a URL
// holding it are masked in every form.
func TestSecretFormsMasked(t *testing.T) {
	t.Parallel()
	const secret = `sk "live"\ 42/x&y=z`
	// The log goes through the masking writer serve puts under the
	// logger (cmd/mcpx maskSecrets), as in production.
	var log syncbuf.Buffer
	secrets := map[string]string{"API_KEY": secret}
	ts := httptest.NewServer(leakyUpstream(secret))
	defer ts.Close()
	g := newGatewayWith(t, Options{
		Servers: map[string]config.ServerConfig{
			"leaky":  {Type: config.TypeStreamableHTTP, URL: ts.URL},
			"remote": {URL: "http://127.0.0.1:1/mcp/" + url.PathEscape(secret) + "?key=" + url.QueryEscape(secret), Timeout: store.Duration(2 * time.Second)},
		},
		Logger:  hclog.New(&hclog.LoggerOptions{Output: redact.New(secrets).Writer(&log), Level: hclog.Debug}),
		Secrets: secrets,
	})
	waitFor(t, "the leaky upstream is ready", func() bool {
		for _, st := range g.Status() {
			if st.Name == "leaky" {
				return st.State == upstream.StateReady
			}
		}
		return false
	})
	c := connect(t, g)
	r := c.call("tools/call", toolCall("leaky_leak", ""))
	msg := gjson.GetBytes(r, "error.message").String()
	if !strings.Contains(msg, "denied: GET") || !strings.Contains(msg, "${API_KEY:masked}") || gjson.GetBytes(r, "error.data.sent").String() != "${API_KEY:masked}" {
		t.Fatalf("the upstream's error did not reach the client masked: %s", r)
	}
	r2 := c.call("resources/read", `{"uri":"`+router.UpstreamURI("remote", "file:///x")+`"}`)
	for name, form := range secretForms(secret) {
		if strings.Contains(string(r), form) {
			t.Errorf("the client's error shows the secret's %s form %q: %s", name, form, r)
		}
		if strings.Contains(string(r2), form) {
			t.Errorf("the client's error of the remote upstream shows the secret's %s form %q: %s", name, form, r2)
		}
		if strings.Contains(log.String(), form) {
			t.Errorf("the log shows the secret's %s form %q:\n%s", name, form, log.String())
		}
	}
}

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

// Issue 15: resources/read of mcpx://artifacts/ID worked only in the
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
