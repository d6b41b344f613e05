package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeBlock returns the first fenced block of kind lang after heading
// in the repository's README.
func readmeBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	readme, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	_, block, ok2 := strings.Cut(after, "```"+lang+"\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("README.md has no ```%s block under %q", lang, heading)
	}
	return block
}

// TestREADMEServeRecipe: the config of the README's "serve it over HTTP"
// recipe is one "mcpx serve --check" accepts, as the recipe says to run.
func TestREADMEServeRecipe(t *testing.T) {
	isolate(t)
	t.Setenv("GITHUB_TOKEN", "x")
	t.Setenv("ALICE_TOKEN", "a-token")
	cfg := readmeBlock(t, "### Serve it over HTTP to many users", "json")
	path := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	got := runCLI(t, nil, "serve", "--config", path, "--check")
	if got.code != exitOK || !strings.Contains(got.stdout, "is valid") || !strings.Contains(got.stdout, "github: stdio") {
		t.Fatalf("serve --check of the README's config: exit %d\nstdout:\n%s\nstderr:\n%s", got.code, got.stdout, got.stderr)
	}
	if !strings.Contains(readmeBlock(t, "### Serve it over HTTP to many users", "sh"), "mcpx serve --config mcpx.json --check") {
		t.Error("the recipe no longer runs --check on its config")
	}
}
