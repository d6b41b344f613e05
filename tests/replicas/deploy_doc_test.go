package replicas

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeployDocShowsHAProxyConfig: docs/operations.md shows the haproxy
// config this package runs, with the doc's addresses.
func TestDeployDocShowsHAProxyConfig(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := renderHAProxy(docsPorts); !strings.Contains(string(doc), "```\n"+want+"```\n") {
		t.Errorf("docs/operations.md does not show the tested haproxy config; it should contain, in a code block:\n%s", want)
	}
}

// TestDeployDocReplicaConfig: the replica config docs/operations.md shows
// passes `mcpx serve --check` (its ${VAR}s set).
func TestDeployDocReplicaConfig(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	cfg, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/operations.md has no ```json block")
	}
	path := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcpx(t), "serve", "--config", path, "--check")
	cmd.Env = append(os.Environ(), "MCPX_HOME="+t.TempDir(), "GITHUB_TOKEN=x", "MCPX_URL_SECRET=s", "MCPX_TOKEN_ALICE=a", "MCPX_TOKEN_BOB=b")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcpx serve --check of the doc's config: %v\n%s", err, out)
	}
}
