// Package wasmtest builds WASM guests for tests: Go packages with the
// standard toolchain (always there) and with TinyGo, Rust crates with
// Debian's rustc, and WebAssembly text (hostile guests written by hand)
// with wabt's wat2wasm. Builds are cached per process. When TinyGo or rustc is
// missing a test skips with a message naming scripts/wasm-toolchains.sh,
// except under CI=true, where it fails: CI never passes by skipping.
package wasmtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Compiler names a guest toolchain.
type Compiler string

// The toolchains.
const (
	Go     Compiler = "go"
	TinyGo Compiler = "tinygo"
	Rust   Compiler = "rust"
)

// TinyGoFlags are the flags every TinyGo guest is built with, as
// scripts/build-wasm.sh builds the presets. The -X leaves gjson's path
// modifiers (@pretty, @reverse, ...) out: a guest reads plain paths, and
// without them (and the encoding/json and fmt they pull in) a module is
// half the size, and wazero decodes and validates it on every load.
var TinyGoFlags = []string{"-target=wasip1", "-buildmode=c-shared", "-no-debug", "-scheduler=none", "-ldflags=-X github.com/tidwall/gjson.disableModifiers=true"}

// RustFlags are the rustc flags of every Rust guest.
var RustFlags = []string{"--target", "wasm32-unknown-unknown", "--edition", "2021", "-O", "-C", "panic=abort", "-C", "target-feature=+bulk-memory", "-C", "strip=debuginfo"}

var (
	mu    sync.Mutex
	cache = map[string][]byte{}
	dir   string
)

// Root is the repository root (the folder with go.mod of the mcpx module).
func Root(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func workDir(tb testing.TB) string {
	if dir == "" {
		d, err := os.MkdirTemp("", "mcpx-wasmtest-")
		if err != nil {
			tb.Fatal(err)
		}
		dir = d
	}
	return dir
}

// Missing skips the test, or fails it under CI=true, for a missing
// toolchain.
func Missing(tb testing.TB, what string) {
	tb.Helper()
	msg := what + " is not installed; run scripts/wasm-toolchains.sh (the README's test command does)"
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + " (CI=true: a test may not skip its subject)")
	}
	tb.Skip(msg)
}

// TinyGoPath finds tinygo: $TINYGOROOT/bin, PATH, or where
// scripts/wasm-toolchains.sh builds it. It returns the binary and root.
func TinyGoPath() (bin, root string, ok bool) {
	var candidates []string
	if r := os.Getenv("TINYGOROOT"); r != "" {
		candidates = append(candidates, filepath.Join(r, "bin", "tinygo"))
	}
	if p, err := exec.LookPath("tinygo"); err == nil {
		candidates = append(candidates, p)
	}
	tools := os.Getenv("MCPX_TOOLS")
	if tools == "" {
		if c, err := os.UserCacheDir(); err == nil {
			tools = filepath.Join(c, "mcpx-tools")
		}
	}
	if tools != "" {
		candidates = append(candidates, filepath.Join(tools, "tinygo", "bin", "tinygo"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, filepath.Dir(filepath.Dir(c)), true
		}
	}
	return "", "", false
}

// RustcPath is Debian's rustc, called by path: a rustup rustc without the
// wasm32 target may come first on PATH.
func RustcPath() (string, bool) {
	if p := os.Getenv("MCPX_RUSTC"); p != "" {
		return p, true
	}
	if _, err := os.Stat("/usr/bin/rustc"); err == nil {
		if _, err := os.Stat("/usr/lib/rustlib/wasm32-unknown-unknown"); err == nil {
			return "/usr/bin/rustc", true
		}
	}
	return "", false
}

// Build builds the Go package pkg (a path relative to the repository root,
// "./plugins/tableau") with c and returns the module's bytes.
func Build(tb testing.TB, c Compiler, pkg string) []byte {
	tb.Helper()
	key := string(c) + "\x00" + pkg
	mu.Lock()
	defer mu.Unlock()
	if b, ok := cache[key]; ok {
		return b
	}
	root := Root(tb)
	out := filepath.Join(workDir(tb), fmt.Sprintf("%s-%d.wasm", c, len(cache)))
	var cmd *exec.Cmd
	switch c {
	case Go:
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		cmd = exec.Command(goBin, "build", "-buildmode=c-shared", "-trimpath", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	case TinyGo:
		bin, troot, ok := TinyGoPath()
		if !ok {
			mu.Unlock()
			defer mu.Lock()
			Missing(tb, "TinyGo v0.42.0")
		}
		cmd = exec.Command(bin, append(append([]string{"build"}, TinyGoFlags...), "-o", out, pkg)...)
		cmd.Env = append(os.Environ(), "TINYGOROOT="+troot)
	default:
		tb.Fatalf("wasmtest: Build: compiler %q builds no Go", c)
	}
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("wasmtest: %s build %s: %v\n%s", c, pkg, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	cache[key] = b
	return b
}

// BuildRust builds the cdylib crate whose root is src (relative to the
// repository root) against the Rust guest SDK and returns the module.
func BuildRust(tb testing.TB, src string) []byte {
	tb.Helper()
	rustc, ok := RustcPath()
	if !ok {
		Missing(tb, "Debian's rustc with libstd-rust-dev-wasm32 and lld-14")
	}
	mu.Lock()
	defer mu.Unlock()
	key := "rust\x00" + src
	if b, ok := cache[key]; ok {
		return b
	}
	root := Root(tb)
	w := workDir(tb)
	rlib := filepath.Join(w, "libmcpx_guest.rlib")
	run := func(args ...string) {
		cmd := exec.Command(rustc, args...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			tb.Fatalf("wasmtest: rustc %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
	}
	if _, ok := cache["rust-sdk"]; !ok {
		run(append(append([]string{}, RustFlags...), "--crate-type", "rlib", "--crate-name", "mcpx_guest", "sdk/wasm-guest/rust/src/lib.rs", "-o", rlib)...)
		cache["rust-sdk"] = nil
	}
	out := filepath.Join(w, fmt.Sprintf("rust-%d.wasm", len(cache)))
	run(append(append([]string{}, RustFlags...), "--crate-type", "cdylib", "--extern", "mcpx_guest="+rlib, src, "-o", out)...)
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	cache[key] = b
	return b
}

// WAT2WASMPath finds wabt's wat2wasm ($MCPX_WAT2WASM, PATH, or Debian's
// /usr/bin/wat2wasm).
func WAT2WASMPath() (string, bool) {
	if p := os.Getenv("MCPX_WAT2WASM"); p != "" {
		return p, true
	}
	if p, err := exec.LookPath("wat2wasm"); err == nil {
		return p, true
	}
	if _, err := os.Stat("/usr/bin/wat2wasm"); err == nil {
		return "/usr/bin/wat2wasm", true
	}
	return "", false
}

// BuildWAT compiles WebAssembly text with wat2wasm and returns the module.
// Tests that template their source (a path, a size) pass the rendered
// text; builds are cached by source.
func BuildWAT(tb testing.TB, src []byte) []byte {
	tb.Helper()
	bin, ok := WAT2WASMPath()
	if !ok {
		Missing(tb, "wabt's wat2wasm")
	}
	mu.Lock()
	defer mu.Unlock()
	key := "wat\x00" + string(src)
	if b, ok := cache[key]; ok {
		return b
	}
	w := workDir(tb)
	in := filepath.Join(w, fmt.Sprintf("wat-%d.wat", len(cache)))
	out := strings.TrimSuffix(in, ".wat") + ".wasm"
	if err := os.WriteFile(in, src, 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, in, "-o", out) // bulk memory is on by default
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("wasmtest: wat2wasm %s: %v\n%s", in, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	cache[key] = b
	return b
}

// Cleanup removes the process's build folder; call it from TestMain after
// m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
		dir = ""
		cache = map[string][]byte{}
	}
}
