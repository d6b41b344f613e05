package mcpxbin_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
)

// TestPath: what Path returns is an mcpx binary that runs, and a second
// call returns the same one.
func TestPath(t *testing.T) {
	bin := mcpxbin.Path(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "mcpx ") {
		t.Fatalf("mcpx version: %v: %s", err, out)
	}
	if again := mcpxbin.Path(t); again != bin {
		t.Errorf("second call: %s, first %s", again, bin)
	}
}
