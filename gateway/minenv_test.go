package gateway

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/syncbuf"
)

// minimalEnv is what an MCP client may start a server with: a short PATH
// and nothing else (no HOME, no XDG variables, no TMPDIR).
var minimalEnv = []string{"PATH=/usr/bin:/bin"}

// buildTableau builds the example Tableau server, a real upstream.
func buildTableau(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tableau-server")
	cmd := exec.Command("go", "build", "-o", out, "../examples/tableau-server")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// mcpProc is an MCP server process driven over its stdin and stdout.
type mcpProc struct {
	t      *testing.T
	name   string
	in     io.WriteCloser
	lines  chan []byte
	stderr syncbuf.Buffer
	exit   chan error
	id     int
}

// startMCP starts cmd, initializes it, and at the test's end closes its
// stdin and expects a clean exit.
func startMCP(t *testing.T, name string, cmd *exec.Cmd) *mcpProc {
	t.Helper()
	p := &mcpProc{t: t, name: name, lines: make(chan []byte, 16), exit: make(chan error, 1)}
	cmd.Stderr = &p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.in = in
	go func() {
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	go func() { p.exit <- cmd.Wait() }()
	t.Cleanup(func() {
		in.Close()
		select {
		case err := <-p.exit:
			if err != nil {
				t.Errorf("%s exited with %v\n%s", name, err, p.stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not exit after stdin closed", name)
		}
	})
	p.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

// call sends a request and returns its result, failing the test on an
// error or after 60s.
func (p *mcpProc) call(method, params string) gjson.Result {
	p.t.Helper()
	p.id++
	fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", p.id, method, params)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("%s closed stdout; stderr:\n%s", p.name, p.stderr.String())
			}
			if r := gjson.ParseBytes(line); r.Get("id").Int() == int64(p.id) {
				if e := r.Get("error"); e.Exists() {
					p.t.Fatalf("%s: %s", method, e.Raw)
				}
				return r.Get("result")
			}
		case <-deadline:
			p.t.Fatalf("%s: no answer in 60s; stderr:\n%s", method, p.stderr.String())
		}
	}
}

// TestMinimalEnvironment starts "mcpx wrap" and "mcpx serve" (stdio) the
// way MCP clients often do, with only a short PATH: each starts, serves a
// call whose image becomes an artifact readable back, logs why its store
// folder fell back, and exits cleanly when stdin closes.
func TestMinimalEnvironment(t *testing.T) {
	t.Parallel()
	mcpx := buildMCPX(t)
	tableau := buildTableau(t)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tableau": map[string]any{"command": tableau}}})
	cfgPath := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"wrap":  {"wrap", "--", tableau},
		"serve": {"serve", "--config", cfgPath},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(mcpx, args...)
			// TMPDIR of the test's own, so that the fallback folder is not
			// the machine's, which other runs (other versions of the
			// store among them) share.
			tmp := t.TempDir()
			cmd.Env = append(append([]string(nil), minimalEnv...), "TMPDIR="+tmp)
			cmd.Dir = t.TempDir()
			p := startMCP(t, "mcpx "+name, cmd)
			res := p.call("tools/call", `{"name":"get_view_as_image","arguments":{"workbook_id":"wb-7f3a"}}`)
			uri := res.Get(`content.#(type=="resource_link").uri`).String()
			if !strings.HasPrefix(uri, "mcpx://artifacts/tableau") || longBase64.MatchString(res.Raw) {
				t.Fatalf("get_view_as_image: %.400s", res.Raw)
			}
			blob, _ := base64.StdEncoding.DecodeString(p.call("resources/read", `{"uri":"`+uri+`"}`).Get("contents.0.blob").String())
			if !bytes.HasPrefix(blob, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("read back %d bytes that are not a PNG", len(blob))
			}
			log := p.stderr.String()
			if !strings.Contains(log, "[WARN]") || !strings.Contains(log, "HOME is not set") || !strings.Contains(log, filepath.Join(tmp, fmt.Sprintf("mcpx-%d", os.Getuid()))) {
				t.Errorf("the store's fallback and its reason are not logged:\n%s", log)
			}
		})
	}
}

// TestWrapPreset wraps the Tableau example under a name that matches no
// preset ("bi-server"): only with --preset tableau does the tableau
// preset store the workbook, with its own summary; an unknown preset is a
// usage error.
func TestWrapPreset(t *testing.T) {
	t.Parallel()
	mcpx := buildMCPX(t)
	bi := filepath.Join(t.TempDir(), "bi-server")
	if err := os.Rename(buildTableau(t), bi); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		flags  []string
		preset bool
	}{
		{"without", nil, false},
		{"with", []string{"--preset", "tableau"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"wrap", "--store", t.TempDir()}, tc.flags...), "--", bi)
			p := startMCP(t, "mcpx wrap", exec.Command(mcpx, args...))
			res := p.call("tools/call", `{"name":"download_workbook","arguments":{"workbook_id":"wb-7f3a"}}`)
			text := res.Get("content.0.text").String()
			art := gjson.Get(text, "content.artifact")
			if !strings.HasPrefix(art.Get("id").String(), "bi-server_") || art.Get("mime_type").String() != "application/pdf" {
				t.Fatalf("the PDF is not an artifact: %.400s", text)
			}
			// The model reads a compact ref; the full one, with its
			// source, is in _meta for hosts.
			byPreset := res.Get(`_meta.mcpx/artifacts.0.artifact.source.layer`).String() == "presets" && strings.Contains(gjson.Get(text, "content.summary").String(), "Downloaded workbook 'Sales Dashboard' as PDF")
			if byPreset != tc.preset {
				t.Errorf("stored by the preset: %v, want %v: %s", byPreset, tc.preset, text)
			}
		})
	}
	out, err := exec.Command(mcpx, "wrap", "--preset", "nope", "--", bi).CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "unknown preset") {
		t.Errorf("--preset nope: %v: %s", err, out)
	}
}
