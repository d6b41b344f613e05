package upstream

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Each type of the package owns one concern (see the package doc): one
// that grows past these bounds holds several, and is cut again rather
// than let grow.
const (
	maxTypeFields  = 25
	maxTypeMethods = 40
)

// TestTypesStaySmall counts the fields of each struct type of the
// package and the methods declared on each type (test files aside).
func TestTypesStaySmall(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	fields, methods := map[string]int{}, map[string]int{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							fields[ts.Name.Name] = st.Fields.NumFields()
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil {
					methods[receiverName(d.Recv.List[0].Type)]++
				}
			}
		}
	}
	var over []string
	for name, n := range fields {
		if n > maxTypeFields {
			over = append(over, name+": "+strconv.Itoa(n)+" fields")
		}
	}
	for name, n := range methods {
		if n > maxTypeMethods {
			over = append(over, name+": "+strconv.Itoa(n)+" methods")
		}
	}
	sort.Strings(over)
	if len(over) > 0 {
		t.Errorf("types over %d fields or %d methods: %s", maxTypeFields, maxTypeMethods, strings.Join(over, ", "))
	}
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
