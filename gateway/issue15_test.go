package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Issue 15: a parse error over HTTP answered with the id guessed from the
// broken body; JSON-RPC 2.0 wants null when the id cannot be determined.
func TestHTTPParseErrorHasNullID(t *testing.T) {
	g := newGatewayWith(t, Options{Servers: map[string]ServerConfig{"stub": stubServer(t)}})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	defer ts.Close()
	for _, body := range []string{`{"jsonrpc":"2.0","id":7,"method":`, `{"jsonrpc":"2.0","id":"seven","method":"ping","params":{`} {
		resp, r := httpPost(t, ts.URL, "", body)
		if resp.StatusCode != http.StatusBadRequest || r.Get("error.code").Int() != CodeParseError || r.Get("id").Raw != "null" {
			t.Errorf("%s: %d %s, want 400 with -32700 and id null", body, resp.StatusCode, r.Raw)
		}
	}
}
