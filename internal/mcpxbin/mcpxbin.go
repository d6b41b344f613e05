// Package mcpxbin builds the mcpx binary for tests that run it as a
// process (the gateway's real-peer tests, the conformance suite, the
// reliability suite, the replicas behind haproxy): once per test binary,
// into a temp folder.
package mcpxbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the one build of this test binary. "go run -exec cp" links
// mcpx as "go build" does, then copies the executable to bin instead of
// running it: go run keeps the executables it links in the build cache,
// so the suite's test binaries, and its next run, link mcpx once rather
// than once each (a link is seconds of CPU, half a minute on a loaded
// machine).
var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpx-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mcpx")
	if out, err := exec.Command("go", "run", "-exec", "cp", "github.com/mcpx-dev/mcpx/cmd/mcpx", bin).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go run -exec cp cmd/mcpx: %w\n%s", err, out)
	}
	return bin, nil
})

// Path returns the built mcpx binary, building it on the first call; a
// build failure fails t.
func Path(t testing.TB) string {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
