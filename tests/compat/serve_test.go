package compat_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

var servingLine = regexp.MustCompile(`MCP at (http://127\.0\.0\.1:\d+/mcp)`)

// serveHTTP starts `mcpx serve --listen 127.0.0.1:0` in front of one stdio
// server, which is told the client capabilities caps
// (mcpx.client_capabilities, as a deployment of such clients says), and
// returns its MCP endpoint and a stop function that ends the process and
// waits for it (so that its store may be opened).
func serveHTTP(t *testing.T, name, script, storeDir string, caps json.RawMessage) (string, func() error, error) {
	srv := map[string]any{"command": script, "mcpx": map[string]any{"client_capabilities": caps}}
	return serveHTTPConfig(t, map[string]any{"mcpServers": map[string]any{name: srv}}, storeDir)
}

// serveHTTPConfig is serveHTTP with a whole config file (serve.tokens,
// serve.artifact_tools).
func serveHTTPConfig(t *testing.T, config map[string]any, storeDir string) (string, func() error, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return "", nil, err
	}
	cfgPath := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return "", nil, err
	}
	cmd := exec.Command(mcpxBin, "serve", "--config", cfgPath, "--store", storeDir, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	waited := make(chan error, 1)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		waited <- cmd.Wait()
	}()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-waited:
			return nil
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			return fmt.Errorf("mcpx serve did not stop within 30 s of SIGTERM")
		}
	}
	select {
	case url := <-found:
		return url, stop, nil
	case err := <-waited:
		if err == nil {
			return "", nil, errors.New("mcpx serve exited with status 0 before listening")
		}
		return "", nil, fmt.Errorf("mcpx serve exited before listening: %w", err)
	case <-time.After(60 * time.Second):
		_ = stop()
		return "", nil, fmt.Errorf("mcpx serve printed no endpoint within 60 s")
	}
}
