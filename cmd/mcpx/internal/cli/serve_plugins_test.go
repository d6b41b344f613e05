package cli

import (
	"strings"
	"testing"
)

// serve takes the same WASM flags as transform and wrap.
func TestServePluginFlags(t *testing.T) {
	isolate(t)
	cfg := "../../../../examples/quickstart/mcpx.json"
	if r := runCLI(t, nil, "serve", "--config", cfg, "--preset", "nope", "--check"); r.code != 2 || !strings.Contains(r.stderr, "unknown preset") {
		t.Fatalf("unknown preset: code %d, stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "serve", "--config", cfg, "--preset", "tableau", "--plugins", t.TempDir(), "--check"); r.code != 0 || !strings.Contains(r.stdout, "is valid") {
		t.Fatalf("preset and plugins folder: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
