package rules

import (
	"os/exec"
	"strings"
	"testing"
)

// mayNotImport keeps docs/design.md's package table: the engine and what
// it is built from know no gateway or web surface, the store knows
// nothing of ours but its own building blocks, and the gateway and the
// artifact service's HTTP surface share what they need through the
// packages below them, not each other. Keys and values are folders of
// the module; a key covers its subfolders.
var mayNotImport = map[string][]string{
	"engine":    {"gateway", "web", "layers", "plugins", "query", "auth", "telemetry", "observe"},
	"layers":    {"gateway", "web", "query", "auth", "telemetry"},
	"inspect":   {"engine", "gateway", "web", "layers", "query"},
	"imageview": {"engine", "gateway", "web", "layers", "query", "inspect"},
	"membudget": {"engine", "gateway", "web", "layers", "query", "inspect", "store"},
	"query":     {"engine", "gateway", "web", "layers"},
	"store":     {"engine", "gateway", "web", "layers", "query", "inspect", "auth", "telemetry", "observe", "plugins"},
	"plugins":   {"engine", "gateway", "web", "layers", "store", "query", "inspect"},
	"observe":   {"gateway", "web"},
	"auth":      {"gateway", "web", "engine", "layers"},
	"telemetry": {"web"},
	"gateway":   {"web", "telemetry"},
	"web":       {"gateway"},
	"sdk":       {"engine", "gateway", "web", "layers", "store", "query", "inspect", "plugins"},
}

// TestArrows: no library imports a folder its row forbids. Its tests may:
// an engine example registers the built-in layers as a host does.
func TestArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	top := func(pkg string) string {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		t, _, _ := strings.Cut(rel, "/")
		return t
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		forbidden := mayNotImport[top(f[0])]
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			for _, no := range forbidden {
				if top(imp) == no {
					t.Errorf("%s imports %s: docs/design.md's package table keeps %s/ below %s/", f[0], imp, top(f[0]), no)
				}
			}
		}
	}
}
