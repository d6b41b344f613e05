package main

import (
	"os/exec"
	"strings"
	"testing"
)

// unlinked are packages (path prefixes) that must stay out of the mcpx
// binary: every mcpx process pays for each package's initialisation, and
// santhosh-tekuri/jsonschema's compiles metaschemas, ~10 ms per process
// (issue 8, BENCHMARKS.md "Process start-up"). mcp-go's server links it,
// and mcp-go's client packages link the server (client/transport's
// inprocess.go); the gateway's upstreams use gateway/internal/upstreamhttp
// instead. Tests may import them.
var unlinked = []string{
	"github.com/mark3labs/mcp-go/server",
	"github.com/mark3labs/mcp-go/client",
	"github.com/santhosh-tekuri/jsonschema",
}

func TestBinaryLinksNoServerLibraries(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed only %d packages: %q", len(deps), deps)
	}
	for _, pkg := range deps {
		for _, bad := range unlinked {
			if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
				t.Errorf("cmd/mcpx links %s; see unlinked", pkg)
			}
		}
	}
}
