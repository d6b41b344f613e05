// Package mcpxbin builds the mcpx binary for tests that run it as a
// process (the reliability suite, the replicas behind haproxy): once per
// test binary, into a temp folder.
package mcpxbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the one build of this test binary.
var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpx-bin-")
	if err != nil {
		return "", err
	}
	// mcpx hands serve, wrap and S3 stores to mcpx-server beside it, as
	// an install of both does.
	for _, name := range []string{"mcpx", "mcpx-server"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/mcpx-dev/mcpx/cmd/"+name).CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build cmd/%s: %v\n%s", name, err, out)
		}
	}
	return filepath.Join(dir, "mcpx"), nil
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
