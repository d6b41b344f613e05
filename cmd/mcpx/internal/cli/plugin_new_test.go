package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

// fakeCheckout makes an mcpx checkout (go.mod and the Go SDK's guest.go)
// at dir.
func fakeCheckout(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "sdk", "wasm-guest", "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.mod"), []byte("// the mcpx module\nmodule "+mcpxModule+"\n\ngo 1.26\n"))
	writeFile(t, filepath.Join(dir, "sdk", "wasm-guest", "go", "guest.go"), []byte("package guest\n"))
	return dir
}

// TestPluginFindGoSDK: where "plugin new --lang go" gets the SDK from, in
// its documented order (from a clone it stopped with "pass
// --sdk").
func TestPluginFindGoSDK(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	clone := fakeCheckout(t, filepath.Join(tmp, "src", "mcpx"))
	other := t.TempDir()
	modCache := fakeCheckout(t, filepath.Join(tmp, "go", "pkg", "mod", "github.com", "mcpx-dev", "mcpx@v1.2.0"))
	notMcpx := filepath.Join(tmp, "notmcpx")
	if err := os.MkdirAll(filepath.Join(notMcpx, "sdk", "wasm-guest", "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(notMcpx, "go.mod"), []byte("module example.com/fork\n"))
	writeFile(t, filepath.Join(notMcpx, "sdk", "wasm-guest", "go", "guest.go"), []byte("package guest\n"))

	devel := &debug.BuildInfo{Main: debug.Module{Path: mcpxModule, Version: "(devel)"}}
	release := &debug.BuildInfo{Main: debug.Module{Path: mcpxModule, Version: "v1.2.0"}}
	dirty := &debug.BuildInfo{Main: debug.Module{Path: mcpxModule, Version: "v1.2.0"}, Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}}
	pseudo := &debug.BuildInfo{Main: debug.Module{Path: mcpxModule, Version: "v0.0.0-20261123181900-a89297f1b2c3+dirty"}}
	asDep := &debug.BuildInfo{Main: debug.Module{Path: "example.com/host"}, Deps: []*debug.Module{{Path: mcpxModule, Version: "v1.3.0"}}}
	src := filepath.Join(clone, "cmd", "mcpx", "plugin_sdk.go")

	tests := []struct {
		name             string
		flag             string
		h                sdkHints
		wantDir, wantVer string
		wantFrom         string
		wantErr          string
	}{
		{name: "--sdk", flag: clone, h: sdkHints{build: devel}, wantDir: clone, wantVer: "v0.0.0-00010101000000-000000000000", wantFrom: "--sdk"},
		{name: "--sdk not a checkout", flag: notMcpx, h: sdkHints{build: devel}, wantErr: "not an mcpx checkout"},
		{name: "clean release", h: sdkHints{sourceFile: src, build: release}, wantVer: "v1.2.0", wantFrom: "module version"},
		{name: "release of a modified tree: its checkout", h: sdkHints{sourceFile: src, build: dirty}, wantDir: clone, wantVer: "v1.2.0", wantFrom: "built from"},
		{name: "source file", h: sdkHints{sourceFile: src, executable: filepath.Join(other, "mcpx"), cwd: other, build: devel}, wantDir: clone, wantFrom: "built from"},
		{name: "trimpath: the executable's checkout", h: sdkHints{sourceFile: mcpxModule + "/cmd/mcpx/internal/cli/plugin_sdk.go", executable: filepath.Join(clone, "bin", "mcpx"), cwd: other, build: devel}, wantDir: clone, wantFrom: "holding this mcpx binary"},
		{name: "go run: the current folder's checkout", h: sdkHints{executable: filepath.Join(other, "go-build", "mcpx"), cwd: filepath.Join(clone, "examples"), build: devel}, wantDir: clone, wantFrom: "current folder"},
		{name: "module cache is no checkout; pseudo-version", h: sdkHints{sourceFile: filepath.Join(modCache, "internal", "cli", "plugin_sdk.go"), cwd: other, build: pseudo}, wantVer: "v0.0.0-20261123181900-a89297f1b2c3", wantFrom: "commit"},
		{name: "another module's go.mod is no checkout", h: sdkHints{cwd: notMcpx, build: devel}, wantErr: "pass --sdk"},
		{name: "mcpx as a dependency", h: sdkHints{cwd: other, build: asDep}, wantVer: "v1.3.0", wantFrom: "module version"},
		{name: "nothing", h: sdkHints{cwd: other}, wantErr: "pass --sdk with the folder of your mcpx clone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findGoSDK(tt.flag, tt.h)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if tt.flag == "" && !errors.Is(err, errNoSDK) {
					t.Errorf("err = %v, want errNoSDK", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.dir != tt.wantDir || (tt.wantVer != "" && got.version != tt.wantVer) || !strings.Contains(got.from, tt.wantFrom) {
				t.Fatalf("got %+v, want dir %q version %q from %q", got, tt.wantDir, tt.wantVer, tt.wantFrom)
			}
			if got.dir != "" && got.version == "" {
				t.Fatalf("a replace needs a version to require: %+v", got)
			}
		})
	}
}

// TestPluginNewServer: the sidecar names the server given, or asked for,
// or (when nobody can be asked) the plugin's name, and the output says
// which.
func TestPluginNewServer(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "ticket-digest")
	r := runCLI(t, nil, "plugin", "new", "--lang", "rust", dir)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `for server "ticket_digest" (no --server: the plugin's name; edit ticket_digest.json or pass --server)`) {
		t.Fatalf("output does not say where the server came from:\n%s", r.stdout)
	}
	side, err := os.ReadFile(filepath.Join(dir, "ticket_digest.json"))
	if err != nil || gjson.GetBytes(side, "servers.0").String() != "ticket_digest" {
		t.Fatalf("sidecar: %v %s", err, side)
	}

	dir = filepath.Join(t.TempDir(), "p")
	if r := runCLI(t, nil, "plugin", "new", "--lang", "rust", "--server", "helpdesk", "--tool", "get_*", dir); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	side, _ = os.ReadFile(filepath.Join(dir, "p.json"))
	var sc wasm.Sidecar
	if err := json.Unmarshal(side, &sc); err != nil || len(sc.Servers) != 1 || sc.Servers[0] != "helpdesk" || sc.Tools[0] != "get_*" {
		t.Fatalf("sidecar %s: %v %+v", side, err, sc)
	}
	// A tool glob: the sample request uses the sample tool.
	if req, _ := os.ReadFile(filepath.Join(dir, "testdata", "request.json")); gjson.GetBytes(req, "tool").String() != sampleTool || gjson.GetBytes(req, "server").String() != "helpdesk" {
		t.Fatalf("request: %s", req)
	}
	if r := runCLI(t, nil, "plugin", "new", "--lang", "go", "--tool", "", filepath.Join(t.TempDir(), "q")); r.code != exitUsage {
		t.Fatalf("empty --tool: exit %d", r.code)
	}

	var prompt strings.Builder
	if got := askServer(strings.NewReader("helpdesk\n"), &prompt, "p"); got != "helpdesk" || !strings.Contains(prompt.String(), "Which MCP server is the plugin for?") {
		t.Errorf("askServer = %q, prompt %q", got, prompt.String())
	}
	if got := askServer(strings.NewReader("\n"), &prompt, "p"); got != "p" {
		t.Errorf("empty answer: %q, want the default", got)
	}
	if got := askServer(strings.NewReader(""), &prompt, "p"); got != "p" {
		t.Errorf("no answer: %q, want the default", got)
	}
	if isTerminal(strings.NewReader("")) {
		t.Error("a strings.Reader is no terminal")
	}
}

// TestPluginTestDumpRequest: --dump-request prints the host's request byte
// for byte, needs no plugin, and checks its flags.
func TestPluginTestDumpRequest(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "in.json"), tableauResult(t, samplePDF()))
	raw, _ := os.ReadFile(in)
	call := engine.Call{Server: "helpdesk", Tool: "get_ticket", Arguments: json.RawMessage(`{"id":"T-1"}`)}
	want := string(wasm.BuildRequest(layer.NewDoc(call, raw), wasm.ModeRewrites, json.RawMessage(`{"keep":5}`), wasm.DefaultLongString)) + "\n"
	args := []string{"plugin", "test", "--dump-request", "--server", "helpdesk", "--tool", "get_ticket", "--arguments", `{"id":"T-1"}`, "--mode", "rewrites", "--plugin-config", `{"keep":5}`}
	for _, tail := range [][]string{{in}, {"absent.wasm", in}} {
		r := runCLI(t, nil, append(args, tail...)...)
		if r.code != exitOK || r.stdout != want || r.stderr != "" {
			t.Fatalf("%v: exit %d\n got %s\nwant %s\n%s", tail, r.code, r.stdout, want, r.stderr)
		}
	}
	// stdin, and the default config {} that the host hands a plugin.
	r := runCLI(t, strings.NewReader(string(raw)), "plugin", "test", "--dump-request")
	if r.code != exitOK || gjson.Get(r.stdout, "config").Raw != "{}" || gjson.Get(r.stdout, "server").String() != "local" || gjson.Get(r.stdout, "candidates.0.mime").String() != "application/pdf" {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	// A plugin run sees the arguments too.
	info, _ := plugins.Lookup("tableau")
	wasmFile := writeFile(t, filepath.Join(dir, "tableau.wasm"), info.Wasm)
	if r := runCLI(t, nil, "plugin", "test", "--arguments", `{"id":1}`, "--server", "tableau", "--tool", "download_workbook", wasmFile, in); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, bad := range [][]string{
		{"plugin", "test", "--dump-request", in, in},
		{"plugin", "test", "--dump-request", "--arguments", "{", in},
		{"plugin", "test", "--arguments", "{", wasmFile, in},
	} {
		if r := runCLI(t, nil, bad...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, exitUsage, r.stderr)
		}
	}
	if r := runCLI(t, strings.NewReader("{not json"), "plugin", "test", "--dump-request"); r.code != exitFail || !strings.Contains(r.stderr, "result:") {
		t.Errorf("bad result: exit %d: %s", r.code, r.stderr)
	}
}

// TestConfigPathsFromTheConfigFolder: "cd / && mcpx
// transform --config …/mcpx.json" failed with "stat /plugins" when
// pipeline.layers.custom.dir was relative. Every path is now taken from
// the config file's folder.
func TestConfigPathsFromTheConfigFolder(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	info, _ := plugins.Lookup("tableau")
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "plugins", "bi.wasm"), info.Wasm)
	writeFile(t, filepath.Join(dir, "listed.wasm"), info.Wasm)
	cfg := writeFile(t, filepath.Join(dir, "mcpx.json"), []byte(`{
  "store": {"dir": "artifacts"},
  "pipeline": {"layers": {"custom": {"dir": "plugins"}},
               "servers": {"crm": {"layers": {"custom": {"plugins": ["listed.wasm"]}}}}}
}`))
	in := writeFile(t, filepath.Join(dir, "in.json"), tableauResult(t, samplePDF()))
	t.Chdir("/")
	for _, server := range []string{"bi", "crm"} {
		r := runCLI(t, nil, "transform", "--config", cfg, "--server", server, "--tool", "download_workbook", in)
		if r.code != exitOK || !strings.Contains(r.stdout, `"layer":"custom"`) {
			t.Fatalf("%s: exit %d: %s %s", server, r.code, r.stdout, r.stderr)
		}
		id := artifactOf(t, r.stdout)
		if _, err := os.Stat(filepath.Join(dir, "artifacts")); err != nil {
			t.Fatalf("%s: artifact %s not in the config folder's store: %v", server, id, err)
		}
	}
}

// TestPluginFlagsKeepLargeIntegers: adding --plugin to a config's custom
// layer keeps the integers of the plugins' config exact.
func TestPluginFlagsKeepLargeIntegers(t *testing.T) {
	t.Parallel()
	cfg := engine.Config{Layers: map[string]json.RawMessage{
		"custom": json.RawMessage(`{"plugins": [{"file": "/a.wasm", "config": {"big": 12345678901234567890}}]}`),
	}}
	p := pluginFlags{plugins: []string{"/b.wasm"}, dir: "/plugins"}
	if err := p.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	got := gjson.ParseBytes(cfg.Layers["custom"])
	if got.Get("plugins.0.config.big").Raw != "12345678901234567890" || got.Get("plugins.1").String() != "/b.wasm" || got.Get("dir").String() != "/plugins" {
		t.Fatalf("custom options: %s", cfg.Layers["custom"])
	}
}
