package cli

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/internal/syncbuf"
)

const testSecret = "sk-live-0123456789abcdef"

// secretConfig writes a config whose remote upstream's URL carries a
// ${VAR} secret in its query.
func secretConfig(t *testing.T) string {
	t.Helper()
	t.Setenv("MCPX_TEST_REMOTE_KEY", testSecret)
	path := filepath.Join(t.TempDir(), "mcpx.json")
	cfg := `{"log": {"level": "info"}, "mcpServers": {"remote": {"url": "http://127.0.0.1:1/mcp?key=${MCPX_TEST_REMOTE_KEY}"}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `serve --check` printed the expanded URL with its secret.
func TestServeCheckMasksSecrets(t *testing.T) {
	isolate(t)
	r := runCLI(t, nil, "serve", "--config", secretConfig(t), "--check")
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, testSecret) || !strings.Contains(r.stdout, "key=${MCPX_TEST_REMOTE_KEY:masked}") {
		t.Fatalf("check: code %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

// The WARN log of an upstream that cannot connect quoted the
// expanded URL with its secret.
func TestServeLogMasksSecrets(t *testing.T) {
	isolate(t)
	cfg := secretConfig(t)
	inR, inW := io.Pipe()
	var stdout, stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() { done <- Run([]string{"serve", "--config", cfg, "--store", t.TempDir()}, inR, &stdout, &stderr) }()
	// the upstream's initialize waits for a client's capabilities
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "retrying") {
		if time.Now().After(deadline) {
			t.Fatalf("no retry warning in 30s:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	inW.Close()
	<-done
	log := stderr.String()
	if strings.Contains(log, testSecret) || !strings.Contains(log, "${MCPX_TEST_REMOTE_KEY:masked}") {
		t.Fatalf("log:\n%s", log)
	}
}

// TestServeCheckSaysInstances: `serve --check` says, for each server, the
// instance mode it gets and why: a stdio server without mcpx.instances
// runs a process per user when the listener admits several principals
// (distinct token identities, or JWTs), one shared process otherwise
// (stdio, one token); an explicit mode is kept.
func TestServeCheckSaysInstances(t *testing.T) {
	isolate(t)
	servers := `"mcpServers": {
		"browser": {"command": "srv"},
		"team": {"command": "srv", "mcpx": {"instances": "shared"}},
		"shell": {"command": "srv", "mcpx": {"instances": "per_session"}},
		"remote": {"url": "http://127.0.0.1:1/mcp"}}`
	const (
		browser = `  browser: stdio: "srv"; timeout 1m0s; startup timeout 2m0s; instances `
		team    = `  team: stdio: "srv"; timeout 1m0s; startup timeout 2m0s; instances shared: one process for every user (explicit)`
		shell   = `  shell: stdio: "srv"; timeout 1m0s; startup timeout 2m0s; instances per_session: a process per session (explicit)`
		remote  = `  remote: streamable-http: http://127.0.0.1:1/mcp; timeout 1m0s; startup timeout 1m0s; instances shared (a remote server)`
	)
	for _, tc := range []struct {
		name, serve string
		listen      bool
		want        string
	}{
		{"three principals", `{"tokens": {"ta": "alice", "ta2": "alice", "tb": "bob"}, "auth": {"tokens": {"tc": {"tenant": "acme", "user": "carol"}}}}`, true,
			"per_user: a process per user (default: 3 principals are configured)"},
		{"JWT", `{"auth": {"jwt": {"jwks_url": "https://idp.example/jwks.json", "issuer": "https://idp.example/", "audience": "https://mcpx.example/"}}}`, true,
			"per_user: a process per user (default: JWTs admit any number of users)"},
		{"one principal", `{"tokens": {"ta": "alice", "ta2": "alice"}}`, true,
			"shared: one process for every user (default: one principal is configured)"},
		{"stdio", `{"tokens": {"ta": "alice", "tb": "bob"}}`, false,
			"shared: one process for every user (default: one user)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcpx.json")
			if err := os.WriteFile(path, []byte(`{`+servers+`, "serve": `+tc.serve+`}`), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"serve", "--config", path, "--check"}
			if tc.listen {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			r := runCLI(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("check: code %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(r.stdout, "\n")
			for _, want := range []string{browser + tc.want, team, shell, remote} {
				if !slices.Contains(lines, want) {
					t.Errorf("no line %q in\n%s", want, r.stdout)
				}
			}
		})
	}
}
