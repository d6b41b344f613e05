package rules

import (
	"go/ast"
	"go/parser"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// Each type owns one concern: one that grows past these bounds holds
// several, each of which belongs in a type of its own that owns its state
// and its lock (docs/design.md, "The gateway's rooms"), and is cut again
// rather than let grow.
const (
	maxTypeFields  = 25
	maxTypeMethods = 40
)

// knownLarge are the types over the bounds while they are being cut, by
// folder and name, with why each may stay for now. A type that shrinks
// within the bounds fails the test until it leaves the table.
var knownLarge = map[string]string{}

// TestTypesStaySmall counts the fields of every struct type and the
// methods declared on every type in the repository's Go files, test
// files aside.
func TestTypesStaySmall(t *testing.T) {
	fields, methods := typeSizes(t)
	var over []string
	seen := map[string]bool{}
	for name, n := range fields {
		if n > maxTypeFields {
			seen[name] = true
			if _, ok := knownLarge[name]; !ok {
				over = append(over, name+": "+strconv.Itoa(n)+" fields")
			}
		}
	}
	for name, n := range methods {
		if n > maxTypeMethods {
			seen[name] = true
			if _, ok := knownLarge[name]; !ok {
				over = append(over, name+": "+strconv.Itoa(n)+" methods")
			}
		}
	}
	sort.Strings(over)
	if len(over) > 0 {
		t.Errorf("types over %d fields or %d methods: %s", maxTypeFields, maxTypeMethods, strings.Join(over, ", "))
	}
	for name := range knownLarge {
		if !seen[name] {
			t.Errorf("%s is within %d fields and %d methods now: take it out of knownLarge", name, maxTypeFields, maxTypeMethods)
		}
	}
}

// typeSizes returns the fields of each struct type and the methods of
// each type, keyed "folder.Name" (the folder relative to the
// repository's root).
func typeSizes(t *testing.T) (fields, methods map[string]int) {
	t.Helper()
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := gosrc.Parse(root, func(string) bool { return false }, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	fields, methods = map[string]int{}, map[string]int{}
	for dir, fs := range files {
		pkg := filepath.ToSlash(dir) + "."
		for _, f := range fs {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok {
							if st, ok := ts.Type.(*ast.StructType); ok {
								fields[pkg+ts.Name.Name] = st.Fields.NumFields()
							}
						}
					}
				case *ast.FuncDecl:
					if d.Recv != nil {
						methods[pkg+receiverName(d.Recv.List[0].Type)]++
					}
				}
			}
		}
	}
	return fields, methods
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
