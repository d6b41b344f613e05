package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/wasmtest"
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
	if r.code != exitOK || !strings.Contains(r.stdout, `"layer":"presets"`) || !strings.Contains(r.stdout, "Downloaded workbook") {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "transform", "--preset", "nope", in); r.code != exitUsage || !strings.Contains(r.stderr, "unknown preset") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	info, _ := plugins.Lookup("tableau")
	wasmFile := writeFile(t, filepath.Join(dir, "t.wasm"), info.Wasm)
	r = runCLI(t, nil, "transform", "--store", t.TempDir(), "--server", "bi", "--tool", "download_workbook", "--plugin", wasmFile, in)
	if r.code != exitOK || !strings.Contains(r.stdout, `"layer":"custom"`) {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	plugDir := t.TempDir()
	writeFile(t, filepath.Join(plugDir, "bi.wasm"), info.Wasm)
	r = runCLI(t, nil, "transform", "--store", t.TempDir(), "--server", "bi", "--tool", "download_workbook", "--plugins", plugDir, in)
	if r.code != exitOK || !strings.Contains(r.stdout, `"layer":"custom"`) {
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

// TestPluginNewGo: from a clone, with no --sdk, the Go scaffold finds the
// checkout this binary was built from, says what it wrote and what to run,
// and its build.sh says that TinyGo is missing, then tidies, passes its
// test and builds with Go; the module works under "plugin test".
func TestPluginNewGo(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "my-plugin")
	root := wasmtest.Root(t)
	r := runCLI(t, nil, "plugin", "new", "--lang", "go", "--server", "reports", dir)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, w := range []string{
		`Wrote a Go plugin "my_plugin" for server "reports" in ` + dir,
		"my_plugin.json", "build.sh", "main.go", "main_test.go",
		"The Go SDK comes from " + root + " (the checkout this mcpx was built from)",
		"Nothing is built yet. Next:", "./build.sh", "mcpx plugin test my_plugin.wasm --server reports --tool export testdata/sample.json",
		"mcpx transform --plugin my_plugin.wasm", "copy my_plugin.wasm and my_plugin.json into a plugins folder",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if !strings.Contains(string(mod), "replace github.com/mcpx-dev/mcpx => "+root) {
		t.Fatalf("go.mod:\n%s", mod)
	}
	side, _ := os.ReadFile(filepath.Join(dir, "my_plugin.json"))
	if gjson.GetBytes(side, "servers.0").String() != "reports" || gjson.GetBytes(side, "tools.0").String() != "*" {
		t.Fatalf("sidecar: %s", side)
	}
	// No TinyGo anywhere build.sh looks: it says so and builds with Go.
	noTools := t.TempDir()
	env := []string{"PATH=" + filepath.Dir(goTool()) + string(os.PathListSeparator) + "/usr/bin:/bin", "GOFLAGS=-mod=mod",
		"TINYGOROOT=", "MCPX_TOOLS=" + noTools}
	out := runIn(t, dir, env, "sh", "build.sh")
	for _, w := range []string{"TinyGo is not on PATH, in $TINYGOROOT or in " + noTools + "/tinygo (where mcpx's scripts/wasm-toolchains.sh builds it)",
		"building with the standard Go toolchain instead", "built my_plugin.wasm with Go", "next: mcpx plugin test my_plugin.wasm"} {
		if !strings.Contains(out, w) {
			t.Errorf("build.sh output lacks %q:\n%s", w, out)
		}
	}
	if out := runInFail(t, dir, append(env, "COMPILER=tinygo"), "sh", "build.sh"); !strings.Contains(out, "COMPILER=tinygo: install TinyGo v0.42.0 or run scripts/wasm-toolchains.sh") {
		t.Errorf("COMPILER=tinygo without TinyGo:\n%s", out)
	}
	wasmFile := filepath.Join(dir, "my_plugin.wasm")
	r = runCLI(t, nil, "plugin", "test", wasmFile, "--server", "reports", "--tool", "export", filepath.Join(dir, "testdata", "sample.json"))
	if r.code != exitOK || len(gjson.Get(r.stdout, "artifacts").Array()) != 1 || !strings.Contains(r.stdout, "A file from reports/export — PDF") || strings.Contains(r.stdout, "Artifact: ") {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "plugin", "new", "--lang", "go", "--sdk", root, dir); r.code != exitFail {
		t.Fatalf("a second scaffold into a full folder: exit %d", r.code)
	}
}

// runInFail runs a command that must fail and returns its output.
func runInFail(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("%s %v succeeded:\n%s", name, args, out)
	}
	return string(out)
}

// TestPluginNewRust: the Rust scaffold passes its two tests (one on the
// exact request mcpx sends, one on a RequestBuilder request) and builds
// with rustc alone.
func TestPluginNewRust(t *testing.T) {
	isolate(t)
	rustc, ok := wasmtest.RustcPath()
	if !ok {
		wasmtest.Missing(t, "Debian's rustc with libstd-rust-dev-wasm32 and lld-14")
	}
	dir := filepath.Join(t.TempDir(), "search-digest")
	r := runCLI(t, nil, "plugin", "new", "--lang", "rust", "--server", "docs", "--tool", "search_docs", dir)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `Wrote a Rust plugin "search_digest" for server "docs"`) || !strings.Contains(r.stdout, "testdata/request.json") {
		t.Fatalf("output:\n%s", r.stdout)
	}
	// The request in testdata is what --dump-request prints.
	dump := runCLI(t, nil, "plugin", "test", "--dump-request", "--server", "docs", "--tool", "search_docs", filepath.Join(dir, "testdata", "sample.json"))
	req, _ := os.ReadFile(filepath.Join(dir, "testdata", "request.json"))
	if dump.code != exitOK || dump.stdout != string(req) {
		t.Fatalf("testdata/request.json differs from --dump-request (exit %d):\n%s\n%s", dump.code, req, dump.stdout)
	}
	out := runIn(t, dir, []string{"RUSTC=" + rustc}, "sh", "build.sh")
	if !strings.Contains(out, "test result: ok. 2 passed") || !strings.Contains(out, "built search_digest.wasm with rustc") {
		t.Fatalf("the scaffold's tests did not run:\n%s", out)
	}
	r = runCLI(t, nil, "plugin", "test", filepath.Join(dir, "search_digest.wasm"), "--server", "docs", "--tool", "search_docs", filepath.Join(dir, "testdata", "sample.json"))
	if r.code != exitOK || len(gjson.Get(r.stdout, "artifacts").Array()) != 1 || !strings.Contains(r.stdout, "A file from docs/search_docs — PDF") || strings.Contains(r.stdout, "Artifact: ") {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	var o struct{ Rewrites []json.RawMessage }
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || len(o.Rewrites) != 1 {
		t.Fatalf("%v %s", err, r.stdout)
	}
}
