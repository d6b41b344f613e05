package gateway

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/store/memstore"
	"github.com/mcpx-dev/mcpx/web"
)

// TestArgumentRewriting checks the arguments on the way in (docs/design.md,
// "Arguments on the way in"): an
// mcpx://artifacts/{id} string anywhere in the arguments, and an artifact
// named by id in the configured fields (filename, file_names), reach the
// upstream as a signed URL that serves the exact bytes, or inlined as
// base64 for a tool configured to need bytes; other values are left
// alone and another session's artifact is refused.
func TestArgumentRewriting(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Config{})
	srv := httptest.NewUnstartedServer(nil) // listens on 127.0.0.1
	signer, err := web.NewSigner(web.SignerConfig{BaseURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /artifacts/{id}", web.NewHandler(st, signer, nil))
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()

	stub := stubServer(t)
	stub.Mcpx.Tools = map[string]config.ToolOptions{"who*": {Arguments: config.ArgumentOptions{Mode: config.ArgsBase64}}}
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stub}, engine.Options{Store: st, Linker: signer})
	c := connect(t, g)
	uri := c.result("tools/call", toolCall("image", "")).Get(`content.#(type=="resource_link").uri`).String()
	id, ok := artifacts.ID(uri)
	if !ok {
		t.Fatalf("no artifact from the image tool")
	}
	png, _ := base64.StdEncoding.DecodeString(pngB64)

	got := c.result("tools/call", toolCall("echo", `{"v":"`+uri+`","filename":"`+id+`","file_names":["`+id+`","notes.txt"],"nested":{"deep":["`+uri+`"]},"plain":"`+id+`"}`)).Get("structuredContent")
	for _, path := range []string{"v", "filename", "file_names.0", "nested.deep.0"} {
		u := got.Get(path).String()
		if !strings.HasPrefix(u, srv.URL+"/artifacts/"+id+"?") {
			t.Errorf("%s reached the upstream as %q, want a capability URL", path, u)
			continue
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != string(png) || resp.Header.Get("Content-Type") != "image/png" {
			t.Errorf("%s: GET %s: %d %s, %d bytes", path, u, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
		resp, err = http.Get(strings.Replace(u, "sig=", "sig=x", 1))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("tampered URL: status %d", resp.StatusCode)
		}
	}
	if v := got.Get("file_names.1").String(); v != "notes.txt" {
		t.Errorf("a file name that is no artifact was changed to %q", v)
	}
	if v := got.Get("plain").String(); v != id {
		t.Errorf("a bare id outside the configured fields was changed to %q", v)
	}

	// a tool configured (by glob) to need bytes gets them inline
	if v := c.result("tools/call", toolCall("whoami", `{"filename":"`+uri+`"}`)).Get("structuredContent.filename").String(); v != pngB64 {
		t.Errorf("base64 mode: filename reached the upstream as %.80q, want the PNG's base64", v)
	}
	// arguments without references pass through untouched
	if v := c.result("tools/call", toolCall("echo", `{"v":"mcpx is fine"}`)).Get("structuredContent.v").String(); v != "mcpx is fine" {
		t.Errorf("plain argument: %q", v)
	}

	other := connect(t, g)
	r := other.call("tools/call", toolCall("echo", `{"v":"`+uri+`"}`))
	if code := gjson.GetBytes(r, "error.code").Int(); code != jsonrpc.CodeUnauthorized {
		t.Errorf("another session's artifact in arguments: want code %d, got %s", jsonrpc.CodeUnauthorized, r)
	}
}

// TestArgumentRewritingWithoutLinker: without an HTTP surface a URL-mode
// tool gets the bytes inline (data-uri mode adds the MIME type).
func TestArgumentRewritingWithoutLinker(t *testing.T) {
	t.Parallel()
	stub := stubServer(t)
	stub.Mcpx.Tools = map[string]config.ToolOptions{"whoami": {Arguments: config.ArgumentOptions{Mode: config.ArgsDataURI}}}
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stub}, engine.Options{})
	c := connect(t, g)
	uri := c.result("tools/call", toolCall("image", "")).Get(`content.#(type=="resource_link").uri`).String()
	if v := c.result("tools/call", toolCall("echo", `{"v":"`+uri+`"}`)).Get("structuredContent.v").String(); v != pngB64 {
		t.Errorf("url mode without a linker: %.80q, want the base64", v)
	}
	if v := c.result("tools/call", toolCall("whoami", `{"v":"`+uri+`"}`)).Get("structuredContent.v").String(); v != "data:image/png;base64,"+pngB64 {
		t.Errorf("data-uri mode: %.80q", v)
	}
}
