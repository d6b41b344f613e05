package wasmguest_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/layers/wasm/wasmtest"
)

// TestRustPluginSDKUnitTests runs the Rust SDK's own tests (JSON round trips,
// quote_name, RequestBuilder, the Rewrite builders) natively with rustc.
func TestRustPluginSDKUnitTests(t *testing.T) {
	rustc, ok := wasmtest.RustcPath()
	if !ok {
		wasmtest.Missing(t, "Debian's rustc with libstd-rust-dev-wasm32 and lld-14")
	}
	bin := filepath.Join(t.TempDir(), "mcpx_guest-test")
	if out, err := exec.Command(rustc, "--edition", "2021", "--test", "rust/src/lib.rs", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("rustc --test: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "test result: ok.") {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, name := range []string{"quote_name_keeps_placeholders_out", "request_builder_round_trips", "rewrite_builders"} {
		if !strings.Contains(string(out), "tests::"+name+" ... ok") {
			t.Errorf("test %s did not run:\n%s", name, out)
		}
	}
}
