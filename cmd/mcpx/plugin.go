package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/layers/wasm" // registers the custom and presets layers
	wasmguest "github.com/mcpx-dev/mcpx/sdk/wasm-guest"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

var pluginTestCmd = command{
	name:     "plugin test",
	synopsis: "[--server NAME] [--tool NAME] [--mode custom|rewrites] [--plugin-config JSON] [--timeout D] FILE.wasm [RESULT]",
	about: `
Plugin test runs one WASM plugin (sdk/wasm-guest/ABI.md) on one tool result
(the file RESULT, or stdin) and prints, as JSON on stdout, the plugin's
rewrites and the outcome: the transformed result, the artifacts it would
store (kept in memory only: nothing is written) and the failed rewrites.

A plugin that traps, runs past its deadline, runs out of memory or answers
something malformed is an error: exit code 1 and one line on stderr that
names the plugin and the cause.`,
	example: `
mcpx plugin test plugin.wasm --server tableau --tool download_workbook result.json
mcpx plugin test --mode rewrites --plugin-config '{"preview":500}' github.wasm < result.json | jq .rewrites`,
}

var pluginNewCmd = command{
	name:     "plugin new",
	synopsis: "--lang go|rust [--name NAME] [--sdk DIR] DIR",
	about: `
Plugin new writes a plugin project into DIR (which must not exist or be
empty): a transformer that moves base64 files out of tool results, its
test, a sample result, build.sh and a README that walks through the rest.

--lang go: a Go module that builds with the standard toolchain
(GOOS=wasip1 GOARCH=wasm) and with TinyGo, importing the Go guest SDK. The
module requires github.com/mcpx-dev/mcpx at this binary's version; --sdk
points it at a local mcpx checkout instead (a replace directive).

--lang rust: a crate with the dependency-free Rust guest SDK copied in, so
that it builds with rustc alone (Debian's rustc 1.63 and lld work).`,
	example: `
mcpx plugin new --lang go ./my-plugin && cd my-plugin && ./build.sh
mcpx plugin new --lang rust --name search_digest ./search-digest`,
}

const pluginUsage = `Usage: mcpx plugin <command> [flags] [arguments]

Commands:
  test    run one plugin on a result and print its rewrites and the outcome
  new     write a new plugin project (Go or Rust) that builds and passes its test

Run "mcpx plugin <command> --help" for its flags.
`

// runPlugin is "mcpx plugin".
func runPlugin(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginUsage)
		return exitUsage
	}
	switch args[0] {
	case "test":
		return runPluginTest(args[1:], stdin, stdout, stderr)
	case "new":
		return runPluginNew(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, pluginUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "mcpx plugin: unknown command %q\n%s", args[0], pluginUsage)
	return exitUsage
}

// pluginFlags are the WASM flags of "mcpx transform".
type pluginFlags struct {
	plugins, presets []string
	dir              string
}

// register adds --plugin, --preset and --plugins to fs.
func (p *pluginFlags) register(fs *flag.FlagSet) {
	fs.Func("plugin", "run the WASM custom transformer `FILE.wasm` on every result (repeatable)", func(s string) error {
		p.plugins = append(p.plugins, s)
		return nil
	})
	fs.Func("preset", "run the built-in WASM preset `NAME` ("+strings.Join(wasm.PresetNames(), ", ")+") besides the\nones that match the server (repeatable)", func(s string) error {
		p.presets = append(p.presets, s)
		return nil
	})
	fs.StringVar(&p.dir, "plugins", "", "load the plugins of the folder `DIR` (NAME.wasm with an optional NAME.json)")
}

// applyOr adds the flags' plugins to cfg for command c. It returns -1 when
// that worked, else the exit code, having reported the error: an unknown
// preset is a usage error (2), anything else a failure (1).
func (p *pluginFlags) applyOr(c command, cfg *engine.Config, stderr io.Writer) int {
	err := p.apply(cfg)
	switch {
	case err == nil:
		return -1
	case errors.Is(err, wasm.ErrUnknownPreset):
		return usageError(stderr, c, err)
	default:
		return fail(stderr, c, err)
	}
}

// apply adds the flags' plugins to the pipeline's global layer options.
func (p *pluginFlags) apply(cfg *engine.Config) error {
	if len(p.plugins) == 0 && len(p.presets) == 0 && p.dir == "" {
		return nil
	}
	if cfg.Layers == nil {
		cfg.Layers = map[string]json.RawMessage{}
	} else {
		layers := make(map[string]json.RawMessage, len(cfg.Layers)+2)
		for k, v := range cfg.Layers {
			layers[k] = v
		}
		cfg.Layers = layers
	}
	patch := func(layer string, f func(m map[string]any)) error {
		m := map[string]any{}
		if raw := cfg.Layers[layer]; len(raw) > 0 {
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("config layers.%s: %w", layer, err)
			}
		}
		f(m)
		b, err := json.Marshal(m)
		cfg.Layers[layer] = b
		return err
	}
	if len(p.plugins) > 0 || p.dir != "" {
		err := patch("custom", func(m map[string]any) {
			list, _ := m["plugins"].([]any)
			for _, f := range p.plugins {
				list = append(list, f)
			}
			if list != nil {
				m["plugins"] = list
			}
			if p.dir != "" {
				m["dir"] = p.dir
			}
			m["enabled"] = true
		})
		if err != nil {
			return err
		}
	}
	if len(p.presets) > 0 {
		for _, n := range p.presets {
			if _, ok := findPreset(n); !ok {
				return fmt.Errorf("--preset %s: %w (built in: %s)", n, wasm.ErrUnknownPreset, strings.Join(wasm.PresetNames(), ", "))
			}
		}
		return patch("presets", func(m map[string]any) {
			list, _ := m["add"].([]any)
			for _, n := range p.presets {
				list = append(list, n)
			}
			m["add"] = list
			m["enabled"] = true
		})
	}
	return nil
}

func findPreset(name string) (string, bool) {
	for _, n := range wasm.PresetNames() {
		if n == name {
			return n, true
		}
	}
	return "", false
}

// pluginOutcome is what "plugin test" prints.
type pluginOutcome struct {
	Plugin    string               `json:"plugin"`
	SHA256    string               `json:"sha256"`
	Mode      wasm.Mode            `json:"mode"`
	Rewrites  []engine.Rewrite     `json:"rewrites"`
	Result    json.RawMessage      `json:"result"`
	Artifacts []engine.ArtifactRef `json:"artifacts"`
	Failures  []string             `json:"failures,omitempty"`
	TookMS    float64              `json:"took_ms"`
}

func runPluginTest(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := pluginTestCmd
	fs := newFlagSet(c)
	var (
		server, tool, mode, pluginConfig string
		timeout                          time.Duration
	)
	fs.StringVar(&server, "server", "local", "the upstream server `NAME` the result came from")
	fs.StringVar(&tool, "tool", "", "the tool `NAME` the result came from")
	fs.StringVar(&mode, "mode", string(wasm.ModeCustom), "custom (may replace the payload) or rewrites (as presets run)")
	fs.StringVar(&pluginConfig, "plugin-config", "", "the plugin's config, a JSON object")
	fs.DurationVar(&timeout, "timeout", wasm.DefaultTimeout, "the deadline of the call")
	pos, code := parse(c, fs, args, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(stderr, c, fmt.Errorf("want FILE.wasm and at most one RESULT, got %d arguments", len(pos)))
	}
	if mode != string(wasm.ModeCustom) && mode != string(wasm.ModeRewrites) {
		return usageError(stderr, c, fmt.Errorf("--mode %q: want custom or rewrites", mode))
	}
	if pluginConfig != "" && !json.Valid([]byte(pluginConfig)) {
		return usageError(stderr, c, errors.New("--plugin-config is not JSON"))
	}
	if timeout <= 0 {
		return usageError(stderr, c, errors.New("--timeout must be positive"))
	}
	var o common
	_, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	bin, err := os.ReadFile(pos[0])
	if err != nil {
		return fail(stderr, c, err)
	}
	in, err := readInput(pos[1:], stdin)
	if err != nil {
		return fail(stderr, c, err)
	}
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, wasm.HostOptions{Logger: log.Named("wasm")})
	if err != nil {
		return fail(stderr, c, err)
	}
	defer h.Close(ctx)
	name := strings.TrimSuffix(filepath.Base(pos[0]), ".wasm")
	p, err := h.Compile(ctx, name, bin, wasm.NewSandboxConfig().WithTimeout(timeout), json.RawMessage(pluginConfig))
	if err != nil {
		return fail(stderr, c, err)
	}
	defer p.Close(ctx)
	call := engine.Call{Server: server, Tool: tool}
	d := engine.NewDoc(call, in)
	if err := d.Err(); err != nil {
		return fail(stderr, c, fmt.Errorf("result: %w", err))
	}
	start := time.Now()
	rws, err := p.Run(ctx, d, wasm.Mode(mode))
	took := time.Since(start)
	if err != nil {
		return fail(stderr, c, err)
	}
	// Execute the rewrites with the engine over a memory store.
	reg := engine.NewRegistry()
	reg.Register(engine.LayerInfo{Name: "plugin", New: func(json.RawMessage, engine.Resources) (engine.Layer, error) {
		return fixedRewrites(rws), nil
	}})
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.NewConfig()), Registry: reg, Config: engine.Config{Chain: []string{"plugin"}}, Logger: log})
	if err != nil {
		return fail(stderr, c, err)
	}
	defer eng.Close(ctx)
	res, err := eng.Transform(ctx, call, in)
	if err != nil {
		return fail(stderr, c, err)
	}
	out := pluginOutcome{
		Plugin: name, SHA256: p.SHA256(), Mode: wasm.Mode(mode), Rewrites: rws, Result: res.Raw,
		Artifacts: res.Artifacts, TookMS: float64(took.Microseconds()) / 1000,
	}
	if out.Rewrites == nil {
		out.Rewrites = []engine.Rewrite{}
	}
	if out.Artifacts == nil {
		out.Artifacts = []engine.ArtifactRef{}
	}
	for _, f := range res.Failures {
		out.Failures = append(out.Failures, f.Error())
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fail(stderr, c, err)
	}
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		return fail(stderr, c, fmt.Errorf("write output: %w", err))
	}
	return exitOK
}

// fixedRewrites is a layer that returns the plugin's rewrites.
type fixedRewrites []engine.Rewrite

// Plan returns the rewrites.
func (f fixedRewrites) Plan(context.Context, *engine.Doc) ([]engine.Rewrite, error) { return f, nil }

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func runPluginNew(args []string, stdout, stderr io.Writer) int {
	c := pluginNewCmd
	fs := newFlagSet(c)
	var lang, name, sdk string
	fs.StringVar(&lang, "lang", "", "go or rust (required)")
	fs.StringVar(&name, "name", "", "the plugin's `NAME`, lowercase letters, digits and _ (default: DIR's base name)")
	fs.StringVar(&sdk, "sdk", "", "a local mcpx checkout `DIR` to build against (Go: a replace directive)")
	pos, code := parse(c, fs, args, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, c, fmt.Errorf("want one DIR, got %d arguments", len(pos)))
	}
	if lang != "go" && lang != "rust" {
		return usageError(stderr, c, fmt.Errorf("--lang %q: want go or rust", lang))
	}
	dir := pos[0]
	if name == "" {
		name = strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(filepath.Base(filepath.Clean(dir))))
	}
	if !validName.MatchString(name) {
		return usageError(stderr, c, fmt.Errorf("name %q: want lowercase letters, digits and _ (use --name)", name))
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fail(stderr, c, fmt.Errorf("%s exists and is not empty", dir))
	}
	if sdk != "" {
		abs, err := filepath.Abs(sdk)
		if err != nil {
			return fail(stderr, c, err)
		}
		if _, err := os.Stat(filepath.Join(abs, "sdk", "wasm-guest", "go", "guest.go")); err != nil {
			return fail(stderr, c, fmt.Errorf("--sdk %s: not an mcpx checkout (no sdk/wasm-guest/go)", sdk))
		}
		sdk = abs
	}
	var files map[string]string
	var err error
	if lang == "go" {
		files, err = goScaffold(name, sdk)
	} else {
		files = rustScaffold(name)
	}
	if err != nil {
		return fail(stderr, c, err)
	}
	for rel, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fail(stderr, c, err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(rel, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			return fail(stderr, c, err)
		}
	}
	fmt.Fprintf(stdout, "wrote a %s plugin %q in %s: cd %s && ./build.sh\n", lang, name, dir, dir)
	return exitOK
}

// mcpxVersion is the version of the mcpx module this binary was built from,
// or "" for a development build.
func mcpxVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return ""
	}
	return bi.Main.Version
}

// sampleResult is a small MCP result with a base64 PDF for the scaffolds'
// tests.
func sampleResult() string {
	pdf := "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n" + strings.Repeat("% sample report line\n", 40) + "%%EOF\n"
	payload := map[string]string{"name": "Sample report", "data": base64.StdEncoding.EncodeToString([]byte(pdf))}
	p, _ := json.Marshal(payload)
	r, _ := json.MarshalIndent(map[string]any{"content": []map[string]string{{"type": "text", "text": string(p)}}}, "", "  ")
	return string(r) + "\n"
}

func goScaffold(name, sdk string) (map[string]string, error) {
	version := mcpxVersion()
	replace := ""
	if sdk != "" {
		if version == "" {
			version = "v0.0.0-00010101000000-000000000000"
		}
		replace = "\nreplace github.com/mcpx-dev/mcpx => " + sdk + "\n"
	} else if version == "" {
		return nil, errors.New("this mcpx is a development build without a module version: pass --sdk with the path of your mcpx checkout")
	}
	r := strings.NewReplacer("NAME", name, "GOSDK", wasmguest.GoSDKImport)
	return map[string]string{
		"go.mod": "module example.com/" + name + "\n\ngo 1.26\n\nrequire github.com/mcpx-dev/mcpx " + version + "\n" + replace,
		"main.go": r.Replace(`// Command NAME is an mcpx custom transformer (a WASM plugin). It moves
// every base64 file in a tool result into the artifact store and leaves a
// summary that names the server and tool. Edit transform to taste.
package main

import (
	guest "GOSDK"
)

func init() { guest.Register(transform) }

func main() {}

func transform(req *guest.Request) (*guest.Response, error) {
	var out guest.Response
	for _, c := range req.Candidates() {
		if !c.IsBinary() {
			continue // text: leave it to mcpx's size net
		}
		out.Add(guest.Rewrite{
			Path:     c.Path,
			Target:   c.Target,
			Action:   guest.Artifact,
			Encoding: guest.Base64,
			Summary:  "{kind} from " + req.Server() + "/" + req.Tool() + " ({size}). Artifact: {id}",
		})
	}
	return &out, nil
}
`),
		"main_test.go": r.Replace(`package main

import (
	"os"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	guest "GOSDK"
)

// TestTransform runs the function natively on the request mcpx would send
// for testdata/sample.json.
func TestTransform(t *testing.T) {
	raw, err := os.ReadFile("testdata/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	d := engine.NewDoc(engine.Call{Server: "reports", Tool: "export"}, raw)
	out, isErr := guest.Handle(wasm.BuildRequest(d, wasm.ModeCustom, nil, wasm.DefaultLongString))
	if isErr {
		t.Fatalf("plugin error: %s", out)
	}
	rws := gjson.GetBytes(out, "rewrites").Array()
	if len(rws) != 1 || rws[0].Get("path").String() != "data" || rws[0].Get("encoding").String() != "base64" {
		t.Fatalf("rewrites = %s, want one base64 artifact at data", out)
	}
}
`),
		"testdata/sample.json": sampleResult(),
		"build.sh": r.Replace(`#!/bin/sh
# Builds NAME.wasm with the standard Go toolchain (and NAME.tinygo.wasm
# when tinygo is on PATH), after running the plugin's test.
set -eu
cd "$(dirname "$0")"
[ -f go.sum ] || go mod tidy
go test ./...
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o NAME.wasm .
echo "built NAME.wasm"
if command -v tinygo >/dev/null 2>&1; then
	tinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -o NAME.tinygo.wasm .
	echo "built NAME.tinygo.wasm"
fi
`),
		".gitignore": "*.wasm\n",
		"README.md":  r.Replace(readmeGo),
	}, nil
}

const readmeGo = "# NAME: an mcpx plugin in Go\n\n" +
	"A custom transformer for [mcpx](https://github.com/mcpx-dev/mcpx): it moves base64 files\n" +
	"out of tool results into the artifact store. The contract it speaks is ABI v1\n" +
	"(`sdk/wasm-guest/ABI.md` in mcpx).\n\n" +
	"## Build and test\n\n" +
	"```sh\n./build.sh                      # go mod tidy, go test, then NAME.wasm\n```\n\n" +
	"The same source builds with TinyGo into a module ten times smaller that loads\n" +
	"in milliseconds:\n\n" +
	"```sh\ntinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -o NAME.wasm .\n```\n\n" +
	"Keep to what both compilers handle: no `encoding/json` (write responses with the\n" +
	"SDK, read requests with gjson), no goroutines, setup in `init()`.\n\n" +
	"## Try it on a result\n\n" +
	"```sh\nmcpx plugin test NAME.wasm --server reports --tool export testdata/sample.json\n```\n\n" +
	"prints the plugin's rewrites and what mcpx makes of them.\n\n" +
	"## Use it\n\n" +
	"Drop `NAME.wasm` into a plugins folder (`mcpx serve --plugins DIR`, or the config key\n" +
	"`pipeline.layers.custom.dir`); it serves the server called `NAME` unless a\n" +
	"`NAME.json` beside it says otherwise:\n\n" +
	"```json\n{\"servers\": [\"reports*\"], \"tools\": [\"export*\"], \"config\": {}, \"limits\": {\"timeout\": \"500ms\"}}\n```\n\n" +
	"mcpx reloads it when either file changes. For one run: `mcpx transform --plugin NAME.wasm ...`.\n"

func rustScaffold(name string) map[string]string {
	r := strings.NewReplacer("NAME", name)
	sdkCargo := wasmguest.RustCargo
	return map[string]string{
		"Cargo.toml": r.Replace(`[package]
name = "NAME"
version = "0.1.0"
edition = "2021"

[lib]
crate-type = ["cdylib", "rlib"]
path = "src/lib.rs"

[dependencies]
mcpx-guest = { path = "mcpx-guest" }

[profile.release]
opt-level = "s"
panic = "abort"
lto = true
`),
		"mcpx-guest/Cargo.toml": sdkCargo,
		"mcpx-guest/src/lib.rs": wasmguest.RustSDK,
		"src/lib.rs": r.Replace(`//! NAME: an mcpx custom transformer. It moves every base64 file in a tool
//! result into the artifact store and leaves a summary that names the
//! server and tool. Edit transform to taste.

use mcpx_guest::{Request, Response, Rewrite};

fn transform(req: &Request) -> Result<Response, String> {
    let mut out = Response::new();
    for c in req.candidates() {
        if !c.is_binary() {
            continue; // text: leave it to mcpx's size net
        }
        let summary = format!("{{kind}} from {}/{} ({{size}}). Artifact: {{id}}", req.server(), req.tool());
        out.push(Rewrite::artifact(&c.path).target(&c.target).base64().summary(&summary));
    }
    Ok(out)
}

mcpx_guest::plugin!(transform);

#[cfg(test)]
mod tests {
    #[test]
    fn moves_the_pdf() {
        let req = r#"{"abi":1,"mode":"custom","server":"reports","tool":"export","arguments":null,
            "payload":{"name":"Sample report","data":{"$mcpx":"long_string","len":1200,"head":"JVBERi0x","mime":"application/pdf","encoding":"base64"}},
            "result":null,
            "candidates":[{"target":"payload","path":"data","len":1200,"head":"JVBERi0x","mime":"application/pdf","encoding":"base64"}],
            "config":{}}"#;
        let out = mcpx_guest::handle(req.as_bytes(), super::transform).unwrap();
        assert!(out.contains("\"path\":\"data\""), "{}", out);
        assert!(out.contains("\"encoding\":\"base64\""), "{}", out);
        assert!(out.contains("PDF") || out.contains("{kind} from reports/export"), "{}", out);
    }
}
`),
		"testdata/sample.json": sampleResult(),
		"build.sh": r.Replace(`#!/bin/sh
# Runs the plugin's test natively, then builds NAME.wasm, with rustc alone
# (no cargo, no crates.io). RUSTC defaults to Debian's /usr/bin/rustc, which
# has the wasm32 target with libstd-rust-dev-wasm32 and lld-14; a rustup
# rustc needs "rustup target add wasm32-unknown-unknown".
set -eu
cd "$(dirname "$0")"
RUSTC=${RUSTC:-/usr/bin/rustc}
[ -x "$RUSTC" ] || RUSTC=rustc
out=target/mcpx
mkdir -p "$out/native" "$out/wasm"
# Native: the test.
"$RUSTC" --edition 2021 --crate-type rlib --crate-name mcpx_guest mcpx-guest/src/lib.rs -o "$out/native/libmcpx_guest.rlib"
"$RUSTC" --edition 2021 --test --extern mcpx_guest="$out/native/libmcpx_guest.rlib" src/lib.rs -o "$out/native/NAME-test"
"$out/native/NAME-test"
# WASM: the plugin.
W="--target wasm32-unknown-unknown --edition 2021 -O -C panic=abort -C target-feature=+bulk-memory -C strip=debuginfo"
"$RUSTC" $W --crate-type rlib --crate-name mcpx_guest mcpx-guest/src/lib.rs -o "$out/wasm/libmcpx_guest.rlib"
"$RUSTC" $W --crate-type cdylib --crate-name NAME --extern mcpx_guest="$out/wasm/libmcpx_guest.rlib" src/lib.rs -o NAME.wasm
echo "built NAME.wasm"
`),
		".gitignore": "*.wasm\ntarget/\n",
		"README.md":  r.Replace(readmeRust),
	}
}

const readmeRust = "# NAME: an mcpx plugin in Rust\n\n" +
	"A custom transformer for [mcpx](https://github.com/mcpx-dev/mcpx): it moves base64 files\n" +
	"out of tool results into the artifact store. The contract it speaks is ABI v1\n" +
	"(`sdk/wasm-guest/ABI.md` in mcpx); `mcpx-guest/` is the dependency-free guest SDK.\n\n" +
	"## Build and test\n\n" +
	"```sh\n./build.sh        # the test natively, then NAME.wasm, with rustc alone\n```\n\n" +
	"On Debian: `apt-get install rustc libstd-rust-dev-wasm32 lld-14`. With rustup:\n" +
	"`rustup target add wasm32-unknown-unknown` and `RUSTC=rustc ./build.sh`, or\n" +
	"`cargo build --release --target wasm32-unknown-unknown`.\n\n" +
	"## Try it on a result\n\n" +
	"```sh\nmcpx plugin test NAME.wasm --server reports --tool export testdata/sample.json\n```\n\n" +
	"## Use it\n\n" +
	"Drop `NAME.wasm` into a plugins folder (`mcpx serve --plugins DIR`, or the config key\n" +
	"`pipeline.layers.custom.dir`); it serves the server called `NAME` unless a\n" +
	"`NAME.json` beside it says otherwise:\n\n" +
	"```json\n{\"servers\": [\"reports*\"], \"tools\": [\"export*\"], \"config\": {}, \"limits\": {\"timeout\": \"500ms\"}}\n```\n"
