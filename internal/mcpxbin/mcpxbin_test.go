package mcpxbin_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
)

func TestPathRuns(t *testing.T) {
	out, err := exec.Command(mcpxbin.Path(t), "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mcpx") {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%s", out)
}
