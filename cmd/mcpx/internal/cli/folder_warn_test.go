package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/plugins"
)

// TestFolderPluginForNoServerWarns, from the CLI: a
// plugin in the hot-load folder named after its folder (my-plugin.wasm)
// serves no server, and said nothing at the default log level. transform
// tells the WASM host its --server, so the plugin is a warning.
func TestFolderPluginForNoServerWarns(t *testing.T) {
	isolate(t)
	info, ok := plugins.Lookup("tableau")
	if !ok {
		t.Fatal("no tableau preset")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "my-plugin.wasm"), info.Wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"pipeline":{"layers":{"custom":{"dir":`+strconv.Quote(dir)+`}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got := runCLI(t, strings.NewReader(`{"content":[{"type":"text","text":"hi"}]}`), "transform", "--config", cfg, "--server", "helpdesk", "--store", t.TempDir())
	if got.code != exitOK {
		t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
	}
	if !strings.Contains(got.stderr, "[WARN]") || !strings.Contains(got.stderr, "matches no configured server") || !strings.Contains(got.stderr, "plugin=my-plugin") {
		t.Fatalf("stderr %q, want a warning that my-plugin serves no server", got.stderr)
	}
}
