package rules

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// reexportsReviewed lists the exported type aliases of the libraries that
// may stay, keyed by package folder and name, with why. Any other alias
// of another package's type is a public name that only re-exports it:
// "go doc" prints "= other.T" and points at a package an embedder may
// not be able to import. A type is declared in the package that owns it.
var reexportsReviewed = map[string]string{
	"gateway:Status":        "an upstream's status for operators, declared by the upstream supervisor (gateway/internal/upstream), which no embedder can import",
	"engine:Call":           "a host that runs the engine names a call without importing engine/layer, where layers (built in or WASM) read it",
	"engine:View":           "as engine:Call",
	"engine:ResourceReader": "as engine:Call",
}

// TestNoTypeReexports: no public library package (outside internal/)
// declares an exported alias of another package's type, unless reviewed.
func TestNoTypeReexports(t *testing.T) {
	files, fset, root := libraryFiles(t)
	var found []string
	eachSpec(files, token.TYPE, func(dir string, _ *ast.GenDecl, sp ast.Spec) {
		ts := sp.(*ast.TypeSpec)
		if strings.Contains("/"+filepath.ToSlash(dir)+"/", "/internal/") || !ts.Assign.IsValid() || !ts.Name.IsExported() {
			return
		}
		if _, other := ts.Type.(*ast.SelectorExpr); !other {
			return
		}
		key := filepath.ToSlash(dir) + ":" + ts.Name.Name
		if _, ok := reexportsReviewed[key]; ok {
			return
		}
		pos := fset.Position(ts.Pos())
		rel, _ := filepath.Rel(root, pos.Filename)
		found = append(found, rel+": "+key)
	})
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("%s re-exports another package's type: declare it in the package that owns it", f)
	}
}

// TestOneDuration: the config tree has one Duration type (store's), so
// every duration of every section reads the same ("30s", or seconds).
func TestOneDuration(t *testing.T) {
	files, fset, root := libraryFiles(t)
	var decls []string
	eachSpec(files, token.TYPE, func(_ string, _ *ast.GenDecl, sp ast.Spec) {
		if ts := sp.(*ast.TypeSpec); ts.Name.Name == "Duration" {
			rel, _ := filepath.Rel(root, fset.Position(ts.Pos()).Filename)
			decls = append(decls, filepath.ToSlash(rel))
		}
	})
	sort.Strings(decls)
	if strings.Join(decls, " ") != "store/duration.go" {
		t.Errorf("Duration types declared in %q, want only store's (store/duration.go)", decls)
	}
}
