package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/layers/wasm/wasmtest"
	"github.com/mcpx-dev/mcpx/plugins"
)

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPluginTest(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	info, _ := plugins.Lookup("tableau")
	wasmFile := writeFile(t, filepath.Join(dir, "tableau.wasm"), info.Wasm)
	in := writeFile(t, filepath.Join(dir, "in.json"), tableauResult(t, samplePDF()))

	r := runCLI(t, nil, "plugin", "test", wasmFile, "--server", "tableau", "--tool", "download_workbook", in)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := gjson.Parse(r.stdout)
	if out.Get("plugin").String() != "tableau" || out.Get("rewrites.0.encoding").String() != "base64" || len(out.Get("artifacts").Array()) != 1 {
		t.Fatalf("outcome: %s", r.stdout)
	}
	if !strings.Contains(out.Get("result").Raw, "Downloaded workbook") {
		t.Fatalf("result has no summary: %s", out.Get("result").Raw)
	}

	// stdin, rewrites mode, another tool: nothing to do.
	r = runCLI(t, strings.NewReader(string(tableauResult(t, samplePDF()))), "plugin", "test", "--mode", "rewrites", "--tool", "list_workbooks", wasmFile)
	if r.code != exitOK || len(gjson.Get(r.stdout, "rewrites").Array()) != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}

	// A file that is not a plugin: one line naming it.
	bad := writeFile(t, filepath.Join(dir, "bad.wasm"), []byte("\x00asm\x01\x00\x00\x00"))
	r = runCLI(t, nil, "plugin", "test", bad, in)
	if r.code != exitFail || !strings.Contains(r.stderr, "plugin[bad]") || !strings.Contains(r.stderr, "plugin_abi_v1") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"plugin", "test"},
		{"plugin", "test", wasmFile, "--mode", "other", in},
		{"plugin", "test", wasmFile, "--plugin-config", "{", in},
		{"plugin", "nope"},
		{"plugin", "new", "--lang", "cobol", dir},
	} {
		if r := runCLI(t, nil, args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, r.code, exitUsage, r.stderr)
		}
	}
}

// TestTransformPluginFlags: --preset and --plugin add WASM layers for one
// run.
func TestTransformPluginFlags(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "in.json"), tableauResult(t, samplePDF()))
	// The server is not called tableau: only --preset runs the preset.
	r := runCLI(t, nil, "transform", "--server", "bi", "--tool", "download_workbook", "--preset", "tableau", in)
	if r.code != exitOK || !strings.Contains(r.stdout, `\"layer\":\"presets\"`) || !strings.Contains(r.stdout, "Downloaded workbook") {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "transform", "--preset", "nope", in); r.code != exitUsage || !strings.Contains(r.stderr, "unknown preset") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	info, _ := plugins.Lookup("tableau")
	wasmFile := writeFile(t, filepath.Join(dir, "t.wasm"), info.Wasm)
	r = runCLI(t, nil, "transform", "--store", t.TempDir(), "--server", "bi", "--tool", "download_workbook", "--plugin", wasmFile, in)
	if r.code != exitOK || !strings.Contains(r.stdout, `\"layer\":\"custom\"`) {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	plugDir := t.TempDir()
	writeFile(t, filepath.Join(plugDir, "bi.wasm"), info.Wasm)
	r = runCLI(t, nil, "transform", "--store", t.TempDir(), "--server", "bi", "--tool", "download_workbook", "--plugins", plugDir, in)
	if r.code != exitOK || !strings.Contains(r.stdout, `\"layer\":\"custom\"`) {
		t.Fatalf("--plugins: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}

func goTool() string { return filepath.Join(runtime.GOROOT(), "bin", "go") }

func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestPluginNewGo: the Go scaffold tidies, passes its test, builds, and
// the module works under "plugin test".
func TestPluginNewGo(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "my-plugin")
	root := wasmtest.Root(t)
	if r := runCLI(t, nil, "plugin", "new", "--lang", "go", "--sdk", root, dir); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	env := []string{"PATH=" + filepath.Dir(goTool()) + string(os.PathListSeparator) + os.Getenv("PATH"), "GOFLAGS=-mod=mod"}
	runIn(t, dir, env, "sh", "build.sh")
	wasmFile := filepath.Join(dir, "my_plugin.wasm")
	r := runCLI(t, nil, "plugin", "test", wasmFile, "--server", "reports", "--tool", "export", filepath.Join(dir, "testdata", "sample.json"))
	if r.code != exitOK || len(gjson.Get(r.stdout, "artifacts").Array()) != 1 || !strings.Contains(r.stdout, "PDF from reports/export") {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "plugin", "new", "--lang", "go", "--sdk", root, dir); r.code != exitFail {
		t.Fatalf("a second scaffold into a full folder: exit %d", r.code)
	}
}

// TestPluginNewRust: the Rust scaffold passes its test and builds with
// rustc alone.
func TestPluginNewRust(t *testing.T) {
	isolate(t)
	rustc, ok := wasmtest.RustcPath()
	if !ok {
		wasmtest.Missing(t, "Debian's rustc with libstd-rust-dev-wasm32 and lld-14")
	}
	dir := filepath.Join(t.TempDir(), "search-digest")
	if r := runCLI(t, nil, "plugin", "new", "--lang", "rust", dir); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := runIn(t, dir, []string{"RUSTC=" + rustc}, "sh", "build.sh")
	if !strings.Contains(out, "test result: ok. 1 passed") {
		t.Fatalf("the scaffold's test did not run:\n%s", out)
	}
	r := runCLI(t, nil, "plugin", "test", filepath.Join(dir, "search_digest.wasm"), "--server", "reports", "--tool", "export", filepath.Join(dir, "testdata", "sample.json"))
	if r.code != exitOK || len(gjson.Get(r.stdout, "artifacts").Array()) != 1 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	var o struct{ Rewrites []json.RawMessage }
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || len(o.Rewrites) != 1 {
		t.Fatalf("%v %s", err, r.stdout)
	}
}
