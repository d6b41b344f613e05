package rules

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mcpx-dev/mcpx"

// floor names the folder a package of the module stands in
// (docs/design.md, "One binary, and the layout").
func floor(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	switch top, _, _ := strings.Cut(rel, "/"); top {
	case "cmd", "internal", "tests", "bench", "examples":
		return top
	}
	return "libraries"
}

// below says which floors of ours a floor may import.
var below = map[string][]string{
	"cmd":       {"cmd", "libraries", "internal"},
	"libraries": {"libraries", "internal"},
	"internal":  {"internal"},
	"tests":     {"cmd", "libraries", "internal", "tests"},
	"bench":     {"libraries", "internal", "bench"},
	"examples":  {"libraries", "internal", "examples"},
}

// TestFloors: each package, with its tests, imports only the floors below
// its own: internal/ holds building blocks that import nothing else of
// ours, the libraries never import the binary, its CLI, a suite or a
// bench command, and nothing but the suites imports the binary's folder.
func TestFloors(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 50 {
		t.Fatalf("go list listed only %d packages", len(lines))
	}
	for _, l := range lines {
		f := strings.Fields(l)
		from := floor(f[0])
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := floor(imp)
			ok := false
			for _, b := range below[from] {
				ok = ok || b == to
			}
			if !ok {
				t.Errorf("%s (%s) imports %s (%s)", f[0], from, imp, to)
			}
		}
	}
}
