package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Limits on the size of one type in the store packages: a type that
// holds more has taken on more than one concern (the folder store's
// Store once held 35 fields behind four mutexes and 80 methods). Split
// it into types that each own one concern and its lock, given the
// siblings they use when built.
const (
	maxTypeFields  = 25
	maxTypeMethods = 40
)

func TestTypesStaySmall(t *testing.T) {
	type shape struct{ fields, methods int }
	shapes := map[string]*shape{} // "dir.Type"
	of := func(dir, name string) *shape {
		k := dir + "." + name
		if shapes[k] == nil {
			shapes[k] = &shape{}
		}
		return shapes[k]
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, "testdata") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						of(dir, ts.Name.Name).fields = st.Fields.NumFields()
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if ix, ok := recv.(*ast.IndexExpr); ok {
					recv = ix.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					of(dir, id.Name).methods++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(shapes))
	for k := range shapes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if s := shapes[k]; s.fields > maxTypeFields || s.methods > maxTypeMethods {
			t.Errorf("%s has %d fields and %d methods; at most %d and %d: split it by concern", k, s.fields, s.methods, maxTypeFields, maxTypeMethods)
		}
	}
}
