package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
)

// TestOneBinary runs cmd/mcpx as built, alone in its folder and with
// nothing else on PATH: the gateway (serve --check builds every layer of
// the config's server), jq and a transform run in it, and no message
// sends the user to install another binary.
func TestOneBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcpx")
	if err := os.Link(mcpxbin.Path(t), bin); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"files": {"command": "files-server"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	store, ids := putArtifacts(t, [2]string{"application/json", `{"items":[{"title":"a"},{"title":"b"}]}`})
	in := filepath.Join(dir, "result.json")
	if err := os.WriteFile(in, []byte(`{"content":[{"type":"text","text":"hello"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--config", cfg, "--check"}, "config " + cfg + " is valid\n"},
		{[]string{"artifacts", "query", "--store", store, "--jq", ".items[].title", ids[0]}, "\"a\"\n\"b\"\n"},
		{[]string{"transform", "--store", filepath.Join(dir, "artifacts"), in}, `"text":"hello"`},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = []string{"PATH=" + dir, "HOME=" + dir}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("mcpx %s: %v\n%s\nwant %q", strings.Join(c.args, " "), err, out, c.want)
		}
		if strings.Contains(string(out), "install") {
			t.Errorf("mcpx %s asks for an install:\n%s", strings.Join(c.args, " "), out)
		}
	}
}
