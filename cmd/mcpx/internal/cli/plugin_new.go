package cli

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	wasmguest "github.com/mcpx-dev/mcpx/sdk/wasm-guest"
)

var pluginNewCmd = command{
	name:     "plugin new",
	brief:    "write a new WASM plugin project (Go or Rust)",
	synopsis: "--lang go|rust [--name NAME] [--server NAME] [--tool GLOB] [--sdk DIR] DIR",
	about: `
Plugin new writes a plugin project into DIR (which must not exist or be
empty). It builds nothing: it writes the source of a transformer that moves
base64 files out of tool results (the long strings and short ones it finds
by walking the payload), its test, a sample result, NAME.json (the
servers and tools the plugin serves in a plugins folder), build.sh (runs the
test, then builds NAME.wasm) and a README; it then prints what to run next.

--server is the MCP server the plugin is for: its name in the config's
mcpServers (or, under "mcpx wrap", the command's base name). NAME.json
says so, so that NAME.wasm dropped into a plugins folder serves that
server. Without --server, plugin new asks when stdin is a terminal and
otherwise uses NAME, and says which it chose.

--lang go: a Go module that builds with TinyGo (when found: on PATH, in
$TINYGOROOT, or in ~/.cache/mcpx-tools/tinygo where mcpx's
scripts/wasm-toolchains.sh puts it) or with the standard toolchain
(GOOS=wasip1 GOARCH=wasm), importing the Go guest SDK from: --sdk DIR; else
a clean release build's own module version; else the mcpx checkout this
binary was built from (found from its sources, the executable or the
current folder; a replace directive); else this build's pseudo-version.

--lang rust: a crate with the dependency-free Rust guest SDK copied in, so
that it builds with rustc alone (Debian's rustc 1.63 and lld work), and
testdata/request.json, the exact request mcpx sends for the sample.`,
	example: `
mcpx plugin new --lang go --server helpdesk ./helpdesk-plugin && cd helpdesk-plugin && ./build.sh
mcpx plugin new --lang rust --name search_digest --server docs ./search-digest`,
}

// validName is a plugin's name; compiled on first use, not in every mcpx
// process's init (BENCHMARKS.md, "Start-up").
var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })

// sampleTool is the tool of the scaffolds' sample result when --tool names
// none.
const sampleTool = "export"

// scaffold is what plugin new writes and says.
type scaffold struct {
	lang, name, server, tool string
	sdk                      goSDK
	files                    map[string]string // path (slash-separated) → content
	about                    map[string]string // path → one line for the output
}

func runPluginNew(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := pluginNewCmd
	fs := newFlagSet(c)
	var lang, name, server, tool, sdk string
	fs.StringVar(&lang, "lang", "", "go or rust (required)")
	fs.StringVar(&name, "name", "", "the plugin's `NAME`, lowercase letters, digits and _ (default: DIR's base name)")
	fs.StringVar(&server, "server", "", "the MCP server `NAME` the plugin is for, written to NAME.json\n(default: asked on a terminal, else the plugin's NAME)")
	fs.StringVar(&tool, "tool", "*", "the tool names (a `GLOB`) the plugin is for, written to NAME.json")
	fs.StringVar(&sdk, "sdk", "", "a local mcpx checkout `DIR` to build against (Go: a replace directive)")
	pos, code := parse(c, fs, args, stdout, stderr)
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
	if !validName().MatchString(name) {
		return usageError(stderr, c, fmt.Errorf("name %q: want lowercase letters, digits and _ (use --name)", name))
	}
	if tool == "" {
		return usageError(stderr, c, errors.New("--tool must not be empty (\"*\" is every tool)"))
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fail(stderr, c, fmt.Errorf("%s exists and is not empty", dir))
	}
	serverNote := ""
	if server == "" {
		if isTerminal(stdin) {
			server = askServer(stdin, stderr, name)
		} else {
			server = name
			serverNote = " (no --server: the plugin's name; edit NAME.json or pass --server)"
		}
	}
	s := scaffold{lang: lang, name: name, server: server, tool: tool}
	if lang == "go" {
		var err error
		if s.sdk, err = findGoSDK(sdk, currentSDKHints()); err != nil {
			return fail(stderr, c, err)
		}
		s.goFiles()
	} else {
		if err := s.rustFiles(); err != nil {
			return fail(stderr, c, err)
		}
	}
	s.commonFiles()
	if err := s.write(dir); err != nil {
		return fail(stderr, c, err)
	}
	s.report(stdout, dir, strings.ReplaceAll(serverNote, "NAME", name))
	return exitOK
}

// isTerminal reports whether r is a terminal, where plugin new may ask.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// askServer asks on stderr for the server the plugin is for and reads the
// answer from stdin; an empty answer (or none) takes def.
func askServer(stdin io.Reader, stderr io.Writer, def string) string {
	fmt.Fprintf(stderr, "Which MCP server is the plugin for? Its name in mcpServers, or the command's base name under \"mcpx wrap\" [%s]: ", def)
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	if v := strings.TrimSpace(line); v != "" {
		return v
	}
	return def
}

// sampleCall is the call the sample result came from.
func (s *scaffold) sampleCall() engine.Call {
	tool := s.tool
	if strings.ContainsAny(tool, "*?[") {
		tool = sampleTool
	}
	return engine.Call{Server: s.server, Tool: tool}
}

func (s *scaffold) add(path, content, about string) {
	if s.files == nil {
		s.files, s.about = map[string]string{}, map[string]string{}
	}
	s.files[path] = content
	if about != "" {
		s.about[path] = about
	}
}

// replacer fills the templates' placeholders.
func (s *scaffold) replacer() *strings.Replacer {
	call := s.sampleCall()
	return strings.NewReplacer("__NAME__", s.name, "__SERVER__", call.Server, "__TOOL__", call.Tool, "__GOSDK__", wasmguest.GoSDKImport)
}

// commonFiles adds what both languages have.
func (s *scaffold) commonFiles() {
	sidecar, _ := json.MarshalIndent(map[string]any{"servers": []string{s.server}, "tools": []string{s.tool}, "config": map[string]any{}}, "", "  ")
	s.add(s.name+".json", string(sidecar)+"\n", fmt.Sprintf("in a plugins folder, NAME.wasm serves server %q, tools %q (edit to change)", s.server, s.tool))
	s.add("testdata/sample.json", sampleResult(), "a result with a base64 PDF to try the plugin on")
	s.add(".gitignore", map[string]string{"go": "*.wasm\n", "rust": "*.wasm\ntarget/\n"}[s.lang], "")
}

// write creates the files under dir.
func (s *scaffold) write(dir string) error {
	for rel, content := range s.files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(rel, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			return err
		}
	}
	return nil
}

// report says what was written, that nothing is built yet, and what to run
// next.
func (s *scaffold) report(w io.Writer, dir, serverNote string) {
	lang := map[string]string{"go": "Go", "rust": "Rust"}[s.lang]
	fmt.Fprintf(w, "Wrote a %s plugin %q for server %q%s in %s:\n", lang, s.name, s.server, serverNote, dir)
	paths := make([]string, 0, len(s.about))
	width := 0
	for p := range s.about {
		paths = append(paths, p)
		width = max(width, len(p))
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(w, "  %-*s  %s\n", width, p, strings.ReplaceAll(s.about[p], "NAME", s.name))
	}
	if s.sdk.dir != "" {
		fmt.Fprintf(w, "The Go SDK comes from %s (%s): go.mod replaces %s with it.\n", s.sdk.dir, s.sdk.from, mcpxModule)
	} else if s.sdk.version != "" {
		fmt.Fprintf(w, "go.mod requires %s %s (%s).\n", mcpxModule, s.sdk.version, s.sdk.from)
	}
	call := s.sampleCall()
	fmt.Fprintf(w, `Nothing is built yet. Next:
  cd %s && ./build.sh          # runs the test, then builds %s.wasm
  mcpx plugin test %s.wasm --server %s --tool %s testdata/sample.json
  mcpx transform --plugin %s.wasm --server %s --tool %s testdata/sample.json
Then copy %s.wasm and %s.json into a plugins folder (mcpx serve or wrap
--plugins DIR, or pipeline.layers.custom.dir): mcpx loads them, and reloads
them when they change.
`, shellQuote(dir), s.name, s.name, s.server, call.Tool, s.name, s.server, call.Tool, s.name, s.name)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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

// goFiles adds the Go project.
func (s *scaffold) goFiles() {
	r := s.replacer()
	mod := "module example.com/" + s.name + "\n\ngo 1.26\n\nrequire " + mcpxModule + " " + s.sdk.version + "\n"
	if s.sdk.dir != "" {
		mod += "\nreplace " + mcpxModule + " => " + s.sdk.dir + "\n"
	}
	s.add("go.mod", mod, "the module; requires mcpx for the Go guest SDK")
	s.add("main.go", r.Replace(goMain), "the transformer: moves base64 files out of results (edit it)")
	s.add("main_test.go", r.Replace(goTest), "its test, run natively by go test on the request mcpx would send")
	s.add("build.sh", r.Replace(goBuild), "go mod tidy, go test, then NAME.wasm with TinyGo if found, else Go")
	s.add("README.md", r.Replace(readmeGo), "how to build, try and deploy it")
}

// rustFiles adds the Rust project.
func (s *scaffold) rustFiles() error {
	r := s.replacer()
	d := layer.NewDoc(s.sampleCall(), []byte(sampleResult()))
	if err := d.Err(); err != nil {
		return fmt.Errorf("sample result: %w", err)
	}
	req := wasm.BuildRequest(d, wasm.ModeCustom, json.RawMessage("{}"), wasm.DefaultLongString)
	s.add("Cargo.toml", r.Replace(rustCargo), "the crate (cargo works too; build.sh needs only rustc)")
	s.add("mcpx-guest/Cargo.toml", wasmguest.RustCargo, "")
	s.add("mcpx-guest/src/lib.rs", wasmguest.RustSDK, "the Rust guest SDK, copied in (no dependencies)")
	s.add("src/lib.rs", r.Replace(rustLib), "the transformer and its tests (edit it)")
	s.add("testdata/request.json", string(req)+"\n", "the exact request mcpx sends for sample.json (plugin test --dump-request)")
	s.add("build.sh", r.Replace(rustBuild), "runs the tests natively, then builds NAME.wasm, with rustc alone")
	s.add("README.md", r.Replace(readmeRust), "how to build, try and deploy it")
	return nil
}

const goMain = `// Command __NAME__ is an mcpx custom transformer (a WASM plugin) for the
// server __SERVER__. It moves the base64 files of a tool result into the
// artifact store, long and short ones, and leaves a summary that names the
// server and tool; mcpx appends what the file is, its id and how to read
// it. Edit transform to taste.
package main

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	guest "__GOSDK__"
)

func init() { guest.Register(transform) }

func main() {}

func transform(req *guest.Request) (*guest.Response, error) {
	var out guest.Response
	summary := "A file from " + req.Server() + "/" + req.Tool()
	// The long strings (256 bytes and more unless the sandbox's
	// long_string says otherwise) are stubs in the skeleton; Candidates
	// says where each is and what its first bytes are. Every base64 one
	// moves, files of text (a base64 CSV) included; plain text is left to
	// mcpx's size net. c.Head is the first 64 bytes: guest.GetValue(c.Path)
	// returns the whole value ("result:"+c.Path when c.Target is Result),
	// within the call's budget, when the decision needs more.
	for _, c := range req.Candidates() {
		if !c.IsBase64() {
			continue
		}
		out.Add(guest.Rewrite{Path: c.Path, Target: c.Target, Action: guest.Artifact, Encoding: guest.Base64, Summary: summary})
	}
	// Every other value is in the skeleton as it came: walk it to reach
	// the short ones. Here a small photo under a key of fileKeys moves
	// too; Verify makes mcpx refuse bytes of no known file type.
	walk(req.Payload(), "", func(path string, v gjson.Result) {
		if v.Type == gjson.String && fileKeys[lastKey(path)] {
			out.Add(guest.Rewrite{Path: path, Action: guest.Artifact, Encoding: guest.Base64, Verify: true, Summary: summary})
		}
	})
	return &out, nil
}

// fileKeys name the fields that hold small base64 files in this server's
// results.
var fileKeys = map[string]bool{"photo": true, "thumbnail": true, "icon": true}

// walk calls fn with the plain path (keys and indexes joined by ".") of
// every value of the skeleton v that is neither an object, an array nor a
// long-string stub (Candidates has those).
func walk(v gjson.Result, path string, fn func(path string, v gjson.Result)) {
	if _, long := guest.Long(v); long {
		return
	}
	switch {
	case v.IsObject():
		v.ForEach(func(k, e gjson.Result) bool {
			walk(e, join(path, escapeKey(k.String())), fn)
			return true
		})
	case v.IsArray():
		i := 0
		v.ForEach(func(_, e gjson.Result) bool {
			walk(e, join(path, strconv.Itoa(i)), fn)
			i++
			return true
		})
	default:
		fn(path, v)
	}
}

func join(path, part string) string {
	if path == "" {
		return part
	}
	return path + "." + part
}

// escapeKey writes a key as a path component: "\" before ".", "\\" and
// the characters paths give a meaning to.
func escapeKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if strings.IndexByte(".\\@*?|#!()[]{}=<>%,\"", k[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(k[i])
	}
	return b.String()
}

// lastKey is the last component of a path.
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 && (i == 0 || path[i-1] != '\\') {
		return path[i+1:]
	}
	return path
}
`

const goTest = `package main

import (
	"os"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	guest "__GOSDK__"
)

// TestTransform runs the function natively on the request mcpx would send
// for testdata/sample.json.
func TestTransform(t *testing.T) {
	raw, err := os.ReadFile("testdata/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	d := layer.NewDoc(layer.Call{Server: "__SERVER__", Tool: "__TOOL__"}, raw)
	out, isErr := guest.Handle(wasm.BuildRequest(d, wasm.ModeCustom, nil, wasm.DefaultLongString))
	if isErr {
		t.Fatalf("plugin error: %s", out)
	}
	rws := gjson.GetBytes(out, "rewrites").Array()
	if len(rws) != 1 || rws[0].Get("path").String() != "data" || rws[0].Get("encoding").String() != "base64" {
		t.Fatalf("rewrites = %s, want one base64 artifact at data", out)
	}
}
`

const goBuild = `#!/bin/sh
# Builds __NAME__.wasm: runs the plugin's test natively (go test), then compiles
# the module with TinyGo when it is found (a module about ten times smaller,
# which loads in milliseconds), else with the standard Go toolchain.
# COMPILER=go or COMPILER=tinygo picks one.
set -eu
cd "$(dirname "$0")"
compiler=${COMPILER:-auto}
# every time: an edit that imports another package needs it, and it is
# quick and offline once the modules are in the cache
go mod tidy
go test ./...
tinygo=""
if [ "$compiler" != go ]; then
	cache=${MCPX_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpx-tools}/tinygo
	if command -v tinygo >/dev/null 2>&1; then
		tinygo=$(command -v tinygo)
	elif [ -n "${TINYGOROOT:-}" ] && [ -x "$TINYGOROOT/bin/tinygo" ]; then
		tinygo=$TINYGOROOT/bin/tinygo
	elif [ -x "$cache/bin/tinygo" ]; then
		tinygo=$cache/bin/tinygo
		export TINYGOROOT="$cache"
		echo "build.sh: TinyGo is not on PATH; using $tinygo (where mcpx's scripts/wasm-toolchains.sh puts it)" >&2
	else
		echo "build.sh: TinyGo is not on PATH, in \$TINYGOROOT or in $cache (where mcpx's scripts/wasm-toolchains.sh builds it)." >&2
		if [ "$compiler" = tinygo ]; then
			echo "build.sh: COMPILER=tinygo: install TinyGo v0.42.0 or run scripts/wasm-toolchains.sh from an mcpx clone" >&2
			exit 1
		fi
		echo "build.sh: building with the standard Go toolchain instead (a bigger module that loads slower)." >&2
	fi
fi
if [ -n "$tinygo" ]; then
	"$tinygo" build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -ldflags='-X github.com/tidwall/gjson.disableModifiers=true' -o __NAME__.wasm .
	echo "built __NAME__.wasm with TinyGo ($(wc -c < __NAME__.wasm) bytes)"
else
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o __NAME__.wasm .
	echo "built __NAME__.wasm with Go ($(wc -c < __NAME__.wasm) bytes)"
fi
echo "next: mcpx plugin test __NAME__.wasm --server __SERVER__ --tool __TOOL__ testdata/sample.json"
`

const readmeGo = "# __NAME__: an mcpx plugin in Go\n\n" +
	"A custom transformer for [mcpx](https://github.com/mcpx-dev/mcpx) for the server `__SERVER__`:\n" +
	"it moves base64 files out of tool results into the artifact store. The contract\n" +
	"it speaks is ABI v1 (`sdk/wasm-guest/ABI.md` in mcpx).\n\n" +
	"## Build and test\n\n" +
	"```sh\n./build.sh\n```\n\n" +
	"runs `go mod tidy`, `go test` (the transformer, natively, on the\n" +
	"request mcpx sends for `testdata/sample.json`), then builds `__NAME__.wasm`: with TinyGo\n" +
	"when it finds it (on `PATH`, in `$TINYGOROOT`, or in `~/.cache/mcpx-tools/tinygo`,\n" +
	"where mcpx's `scripts/wasm-toolchains.sh` puts it), else with the standard Go\n" +
	"toolchain, and says which. `COMPILER=go ./build.sh` or `COMPILER=tinygo ./build.sh`\n" +
	"picks one. By hand:\n\n" +
	"```sh\ntinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -ldflags='-X github.com/tidwall/gjson.disableModifiers=true' -o __NAME__.wasm .\n" +
	"GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o __NAME__.wasm .\n```\n\n" +
	"Keep to what both compilers handle: no `encoding/json` (write responses with the\n" +
	"SDK, read requests with gjson), no goroutines, setup in `init()`. A module built\n" +
	"without `-buildmode=c-shared` does not load.\n\n" +
	"## Try it on a result\n\n" +
	"```sh\nmcpx plugin test __NAME__.wasm --server __SERVER__ --tool __TOOL__ testdata/sample.json\n" +
	"mcpx plugin test --dump-request --server __SERVER__ --tool __TOOL__ testdata/sample.json   # what the plugin receives\n" +
	"mcpx transform --plugin __NAME__.wasm --server __SERVER__ --tool __TOOL__ testdata/sample.json\n```\n\n" +
	"`plugin test` prints the plugin's rewrites and what mcpx makes of them (nothing is\n" +
	"stored); `transform` runs the whole chain and stores the artifacts.\n\n" +
	scaffoldUseIt

const rustCargo = `[package]
name = "__NAME__"
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
`

const rustLib = `//! __NAME__: an mcpx custom transformer for the server __SERVER__. It moves the
//! base64 files of a tool result into the artifact store, long and short ones,
//! and leaves a summary that names the server and tool; mcpx appends what the
//! file is, its id and how to read it. Edit transform to taste.

use mcpx_guest::{Request, Response, Rewrite, Value};

/// Keys that hold small base64 files in this server's results.
const FILE_KEYS: &[&str] = &["photo", "thumbnail", "icon"];

fn transform(req: &Request) -> Result<Response, String> {
    let mut out = Response::new();
    let summary = format!("A file from {}/{}", req.server(), req.tool());
    // The long strings (256 bytes and more by default) are stubs in the
    // skeleton; candidates() says where each is and what its first bytes are.
    // Every base64 one moves, files of text (a base64 CSV) included; plain
    // text is left to mcpx's size net. mcpx_guest::get_value(&c.path) returns
    // a whole value, within the call's budget, when the decision needs more.
    for c in req.candidates() {
        if c.encoding != "base64" {
            continue;
        }
        out.push(Rewrite::artifact(&c.path).target(&c.target).base64().summary(&summary));
    }
    // Every other value is in the skeleton as it came: walk it to reach the
    // short ones (a small photo under a key of FILE_KEYS).
    let mut short = Vec::new();
    walk(&req.payload(), "", "", &mut short);
    for path in short {
        out.push(Rewrite::artifact(&path).base64().verify().summary(&summary));
    }
    Ok(out)
}

/// Collects the plain paths (keys and indexes joined by ".") of the short
/// strings under a key of FILE_KEYS; stubs are candidates, left out here.
fn walk(v: &Value, path: &str, key: &str, out: &mut Vec<String>) {
    if v.long().is_some() {
        return;
    }
    let join = |part: &str| if path.is_empty() { part.to_string() } else { format!("{}.{}", path, part) };
    match v {
        Value::Object(members) => {
            for (k, e) in members {
                let mut esc = String::new();
                for ch in k.chars() {
                    if ".\\@*?|#!()[]{}=<>%,\"".contains(ch) {
                        esc.push('\\');
                    }
                    esc.push(ch);
                }
                walk(e, &join(&esc), k, out);
            }
        }
        Value::Array(items) => {
            for (i, e) in items.iter().enumerate() {
                walk(e, &join(&i.to_string()), "", out);
            }
        }
        Value::String(_) if FILE_KEYS.contains(&key) => out.push(path.to_string()),
        _ => {}
    }
}

mcpx_guest::plugin!(transform);

#[cfg(test)]
mod tests {
    use mcpx_guest::{Candidate, RequestBuilder};

    /// testdata/request.json is the exact request mcpx sends for
    /// testdata/sample.json; regenerate it with
    /// mcpx plugin test --dump-request --server __SERVER__ --tool __TOOL__ testdata/sample.json
    #[test]
    fn moves_the_pdf() {
        let out = mcpx_guest::handle(include_bytes!("../testdata/request.json"), super::transform).unwrap();
        assert!(out.contains("\"path\":\"data\""), "{}", out);
        assert!(out.contains("\"encoding\":\"base64\""), "{}", out);
        assert!(out.contains("A file from __SERVER__/__TOOL__"), "{}", out);
    }

    /// A request built by hand: a long text string is left alone.
    #[test]
    fn leaves_text_alone() {
        let req = RequestBuilder::new("__SERVER__", "__TOOL__")
            .payload(r#"{"notes":{"$mcpx":"long_string","len":5000,"head":"Meeting notes","mime":"text/plain","encoding":"text"}}"#)
            .candidate(Candidate::new("payload", "notes", 5000, "Meeting notes", "text/plain", "text"))
            .build();
        let out = mcpx_guest::handle(req.as_bytes(), super::transform).unwrap();
        assert_eq!(out, r#"{"rewrites":[]}"#);
    }
}
`

const rustBuild = `#!/bin/sh
# Runs the plugin's tests natively, then builds __NAME__.wasm, with rustc alone
# (no cargo, no crates.io). RUSTC defaults to Debian's /usr/bin/rustc, which
# has the wasm32 target with libstd-rust-dev-wasm32 and lld-14; a rustup
# rustc needs "rustup target add wasm32-unknown-unknown".
set -eu
cd "$(dirname "$0")"
RUSTC=${RUSTC:-/usr/bin/rustc}
[ -x "$RUSTC" ] || RUSTC=rustc
out=target/mcpx
mkdir -p "$out/native" "$out/wasm"
# Native: the tests.
"$RUSTC" --edition 2021 --crate-type rlib --crate-name mcpx_guest mcpx-guest/src/lib.rs -o "$out/native/libmcpx_guest.rlib"
"$RUSTC" --edition 2021 --test --extern mcpx_guest="$out/native/libmcpx_guest.rlib" src/lib.rs -o "$out/native/__NAME__-test"
"$out/native/__NAME__-test"
# WASM: the plugin.
W="--target wasm32-unknown-unknown --edition 2021 -O -C panic=abort -C target-feature=+bulk-memory -C strip=debuginfo"
"$RUSTC" $W --crate-type rlib --crate-name mcpx_guest mcpx-guest/src/lib.rs -o "$out/wasm/libmcpx_guest.rlib"
"$RUSTC" $W --crate-type cdylib --crate-name __NAME__ --extern mcpx_guest="$out/wasm/libmcpx_guest.rlib" src/lib.rs -o __NAME__.wasm
echo "built __NAME__.wasm with $("$RUSTC" --version) ($(wc -c < __NAME__.wasm) bytes)"
echo "next: mcpx plugin test __NAME__.wasm --server __SERVER__ --tool __TOOL__ testdata/sample.json"
`

const readmeRust = "# __NAME__: an mcpx plugin in Rust\n\n" +
	"A custom transformer for [mcpx](https://github.com/mcpx-dev/mcpx) for the server `__SERVER__`:\n" +
	"it moves base64 files out of tool results into the artifact store. The contract it\n" +
	"speaks is ABI v1 (`sdk/wasm-guest/ABI.md` in mcpx); `mcpx-guest/` is the\n" +
	"dependency-free guest SDK (its README in mcpx lists the builders).\n\n" +
	"## Build and test\n\n" +
	"```sh\n./build.sh\n```\n\n" +
	"runs the tests in `src/lib.rs` natively (one on `testdata/request.json`, the exact\n" +
	"request mcpx sends for `testdata/sample.json`, one on a request built with\n" +
	"`RequestBuilder`), then builds `__NAME__.wasm`, with rustc alone. On Debian:\n" +
	"`apt-get install rustc libstd-rust-dev-wasm32 lld-14`. With rustup:\n" +
	"`rustup target add wasm32-unknown-unknown` and `RUSTC=rustc ./build.sh`, or\n" +
	"`cargo build --release --target wasm32-unknown-unknown`.\n\n" +
	"## Try it on a result\n\n" +
	"```sh\nmcpx plugin test __NAME__.wasm --server __SERVER__ --tool __TOOL__ testdata/sample.json\n" +
	"mcpx plugin test --dump-request --server __SERVER__ --tool __TOOL__ testdata/sample.json > testdata/request.json\n" +
	"mcpx transform --plugin __NAME__.wasm --server __SERVER__ --tool __TOOL__ testdata/sample.json\n```\n\n" +
	scaffoldUseIt

// scaffoldUseIt ends both languages' scaffold README: how the built plugin
// is put to work.
const scaffoldUseIt = "## Use it\n\n" +
	"Copy `__NAME__.wasm` and `__NAME__.json` into a plugins folder (`mcpx serve --plugins DIR`,\n" +
	"`mcpx wrap --plugins DIR -- ...`, or the config key `pipeline.layers.custom.dir`,\n" +
	"relative to the config file). `__NAME__.json` says which servers and tools it serves:\n\n" +
	"```json\n{\"servers\": [\"__SERVER__\"], \"tools\": [\"*\"], \"config\": {}, \"limits\": {\"timeout\": \"500ms\"}}\n```\n\n" +
	"Without it, `__NAME__.wasm` serves only a server called `__NAME__`. mcpx reloads the plugin\n" +
	"when either file changes; a module that fails to load leaves the previous one serving.\n"
