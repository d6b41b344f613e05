package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/internal/redact"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/store"
)

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

// A secret with a quote, a backslash or a space reached clients
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
