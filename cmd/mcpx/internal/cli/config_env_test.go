package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFromEnvironment: a command run without --config reads the
// config file $MCPX_CONFIG names, so an MCP client's entry needs no
// flags (the inspector CLI takes "mcpx serve --config FILE" as a --config
// of its own); --config wins over the variable, and serve --check says
// which it used.
func TestConfigFromEnvironment(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	write := func(name string) string {
		t.Helper()
		path := filepath.Join(dir, name+".json")
		cfg := `{"store": {"dir": "` + name + `-store"}, "mcpServers": {"` + name + `": {"command": "srv"}}}`
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fromEnv, fromFlag := write("env"), write("flag")
	t.Setenv(envConfig, fromEnv)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--check"}, "config " + fromEnv + " is valid\nconfig file from: $MCPX_CONFIG\nstore: " + filepath.Join(dir, "env-store") + "\n"},
		{[]string{"serve", "--config", fromFlag, "--check"}, "config " + fromFlag + " is valid\nconfig file from: --config\nstore: " + filepath.Join(dir, "flag-store") + "\n"},
	} {
		r := runCLI(t, nil, tc.args...)
		if r.code != exitOK || !strings.HasPrefix(r.stdout, tc.want) {
			t.Errorf("mcpx %s: exit code %d\nstdout:\n%s\nstderr:\n%s\nwant it to start with:\n%s", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.want)
		}
	}

	// transform stores into the variable's store, where artifacts reads.
	r := runCLI(t, bytes.NewReader(tableauResult(t, samplePDF())), "transform", "--server", "tableau", "--tool", "download_workbook")
	if r.code != exitOK {
		t.Fatalf("transform: exit code %d\n%s", r.code, r.stderr)
	}
	id := artifactOf(t, r.stdout)
	if _, err := os.Stat(filepath.Join(dir, "env-store")); err != nil {
		t.Errorf("transform did not store in $MCPX_CONFIG's store.dir: %v", err)
	}
	if r := runCLI(t, nil, "artifacts", "ls", "--json"); !strings.Contains(r.stdout, `"id":"`+id+`"`) {
		t.Errorf("artifacts ls with $MCPX_CONFIG lacks %s:\n%s%s", id, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "artifacts", "ls", "--json", "--config", fromFlag); strings.Contains(r.stdout, id) {
		t.Errorf("artifacts ls --config %s read $MCPX_CONFIG's store:\n%s", fromFlag, r.stdout)
	}
}
