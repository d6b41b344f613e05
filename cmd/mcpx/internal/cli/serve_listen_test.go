package cli

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readyz polls base's /readyz until it answers 200 or 30 s passed, and
// returns the last status and body.
func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	var (
		code int
		body string
	)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if code, body = resp.StatusCode, string(b); code == http.StatusOK {
			break
		}
	}
	return code, body
}

// TestServeListenReadyWithoutClient: over --listen the upstreams start at
// once, declaring the listener's default client capabilities, and
// /readyz answers 200 once they are up, with no MCP client connected
// (before, their initialize waited for the first client and a readiness
// probe that gates traffic never let it in).
func TestServeListenReadyWithoutClient(t *testing.T) {
	isolate(t)
	base, _ := startServeConfig(t, map[string]any{"mcpServers": map[string]any{"files": uiUpstream(t), "more": uiUpstream(t)}})
	if code, body := readyz(t, base); code != http.StatusOK || strings.Contains(body, "starting") {
		t.Fatalf("/readyz with no client = %d %s, want 200", code, body)
	}
}

// TestServeListenArtifactServiceAlone: with --listen, a config with no
// servers is an artifact service (a non-Go host's POST /transform,
// replicas that serve artifacts only): /readyz is 200 with the store
// writable, /mcp offers the artifact tools only, /transform stores. Over
// stdio, no enabled server is still an error that says what to do.
func TestServeListenArtifactServiceAlone(t *testing.T) {
	isolate(t)
	base, _ := startServeConfig(t, map[string]any{"mcpServers": map[string]any{}})
	if code, body := readyz(t, base); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s, want 200", code, body)
	}
	c := &mcpClient{t: t, url: base + "/mcp"}
	c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	if tools := c.call("tools/list", "{}").Get("result.tools.#.name").String(); tools != `["artifacts_query","artifacts_search"]` {
		t.Errorf("tools/list = %s, want the artifact tools only", tools)
	}
	resp, err := http.Post(base+"/transform?server=files&tool=report", "application/json", bytes.NewReader(uiToolResult()))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "mcpx://artifacts/") {
		t.Errorf("POST /transform = %s %.300s", resp.Status, b)
	}

	for name, servers := range map[string]string{"none": `{}`, "all disabled": `{"a": {"command": "x", "disabled": true}}`} {
		path := filepath.Join(t.TempDir(), "mcpx.json")
		if err := os.WriteFile(path, []byte(`{"mcpServers": `+servers+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, nil, "serve", "--config", path, "--store", t.TempDir())
		if want := path + `: no enabled "mcpServers" to serve over stdio (with --listen, no servers is an artifact service`; r.code != exitFail || !strings.Contains(r.stderr, want) {
			t.Errorf("%s over stdio: exit %d, stderr %q, want %q", name, r.code, r.stderr, want)
		}
	}
	path := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "serve", "--config", path, "--listen", "127.0.0.1:0", "--check"); r.code != exitOK || !strings.Contains(r.stdout, "upstreams: none (the artifact service only") {
		t.Errorf("--check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
