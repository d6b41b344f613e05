// Package gosrc parses the repository's own Go source for the tests that
// keep its rules as code: no mutable package state (internal/pkgvars), no
// type over its size (tests/rules).
package gosrc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Root is the repository's root: the folder of the go.mod that dir, a
// folder of the repository, is under.
func Root(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("gosrc: no go.mod above %s", dir)
		}
		d = up
	}
}

// Parse parses the non-test Go files below root, by folder (relative to
// root), leaving out testdata, node_modules and dot folders, and the
// folders for which skip (given the folder relative to root) is true.
func Parse(root string, skip func(rel string) bool, mode parser.Mode) (map[string][]*ast.File, *token.FileSet, error) {
	fset := token.NewFileSet()
	files := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || skip(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, mode)
		if err != nil {
			return err
		}
		files[filepath.Dir(rel)] = append(files[filepath.Dir(rel)], f)
		return nil
	})
	return files, fset, err
}
