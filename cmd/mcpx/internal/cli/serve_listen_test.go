package cli

import (
	"io"
	"net/http"
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
