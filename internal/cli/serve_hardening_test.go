package cli

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
)

const testSecret = "sk-live-0123456789abcdef"

// secretConfig writes a config whose remote upstream's URL carries a
// ${VAR} secret in its query (issue 7's repro).
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

// Issue 7: `serve --check` printed the expanded URL with its secret.
func TestServeCheckMasksSecrets(t *testing.T) {
	isolate(t)
	r := runCLI(t, nil, "serve", "--config", secretConfig(t), "--check")
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, testSecret) || !strings.Contains(r.stdout, "key=${MCPX_TEST_REMOTE_KEY:masked}") {
		t.Fatalf("check: code %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

// Issue 7: the WARN log of an upstream that cannot connect quoted the
// expanded URL with its secret.
func TestServeLogMasksSecrets(t *testing.T) {
	isolate(t)
	cfg := secretConfig(t)
	inR, inW := io.Pipe()
	var stdout, stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"serve", "--config", cfg, "--store", t.TempDir()}, inR, &stdout, &stderr) }()
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

// Issue 7: 50 slow-loris connections stayed open. The --listen server
// cuts a connection whose headers do not arrive within the timeout.
func TestHTTPServerCutsSlowLoris(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), gateway.Limits{ReadHeaderTimeout: gateway.Duration(300 * time.Millisecond)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	const conns = 50
	closed := make(chan error, conns)
	for range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err := io.Copy(io.Discard, c) // returns when the server closes
			closed <- err
		}()
	}
	for range conns {
		if err := <-closed; err != nil {
			t.Fatalf("a slow-loris connection stayed open: %v", err)
		}
	}
}
