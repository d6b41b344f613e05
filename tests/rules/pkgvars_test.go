package rules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// reviewed lists the package-level variables of the libraries that are
// neither sentinel errors, compiled regexps, embedded files nor interface
// guards, keyed by the first folder of their package and their name, with
// why each may exist. Tables are never written after their declaration
// (TestNoPackageVarIsWritten checks the assignments).
var reviewed = map[string]string{
	"cmd:lsCmd":                         "table: the command's help and flags text",
	"cmd:getCmd":                        "table: the command's help and flags text",
	"cmd:rmCmd":                         "table: the command's help and flags text",
	"cmd:fsckCmd":                       "table: the command's help and flags text",
	"cmd:gcCmd":                         "table: the command's help and flags text",
	"cmd:queryCmd":                      "table: the command's help and flags text",
	"cmd:searchCmd":                     "table: the command's help and flags text",
	"cmd:pluginTestCmd":                 "table: the command's help and flags text",
	"cmd:pluginNewCmd":                  "table: the command's help and flags text",
	"cmd:serveCmd":                      "table: the command's help and flags text",
	"cmd:transformCmd":                  "table: the command's help and flags text",
	"cmd:versionCmd":                    "table: the command's help and flags text",
	"cmd:wrapCmd":                       "table: the command's help and flags text",
	"cmd:logLevels":                     "table",
	"engine:contentVars":                "table",
	"imageview:jpegQualities":           "table",
	"web:callEvents":                    "table",
	"engine:argNameKeys":                "table",
	"engine:varNames":                   "table",
	"engine:isB64":                      "table",
	"engine:now":                        "clock: tests swap it, in their own package",
	"engine:defaultRegistry":            "the registry package layers registers into from init (as image.RegisterFormat); an engine takes Options.Registry to avoid it",
	"store:defaultBackends":             "the backends store/s3store registers into from init (as engine:defaultRegistry); the CLI takes a *store.Backends to avoid it",
	"inspect:odfFormats":                "table",
	"inspect:pdfReader":                 "the one PDFium runtime of the process, made on the first PDF: Inspect and PDFPageText are functions, and the compiled module is the process's (as internal:built)",
	"inspect:mpegBitrates":              "table",
	"inspect:jsonStructural":            "table",
	"internal:class":                    "table",
	"internal:built":                    "the one build of the mcpx binary a test binary runs (sync.OnceValues)",
	"internal:readers":                  "sync.Pool of readers: holds no state between uses",
	"internal:walkers":                  "sync.Pool of walkers: holds no state between uses",
	"internal:needsEscape":              "table",
	"internal:simpleEscape":             "table",
	"internal:allTypes":                 "table",
	"internal:quickTimeAtoms":           "table",
	"internal:bitratesV1":               "table",
	"internal:bitratesV2":               "table",
	"internal:sampleRates":              "table",
	"internal:roles":                    "table",
	"internal:names":                    "table",
	"layers:now":                        "clock: tests swap it, in their own package",
	"plugins:presets":                   "table",
	"store:migrations":                  "table",
	"store:schema":                      "table",
	"store:castagnoli":                  "table",
	"store:legacyNames":                 "table",
	"store:collectBatch":                "batch size: tests lower it, in their own package",
	"store:searchSchema":                "table",
	"store:buffers":                     "sync.Pool of buffers: holds no state between uses",
	"gateway:bridgedMethods":            "table",
	"gateway:traceContext":              "a W3C propagator value, no state",
	"gateway:instanceMethods":           "table",
	"inspect:jsonNesting":               "table",
	"telemetry:pluginLayers":            "table",
	"telemetry:goSourced":               "table",
	"telemetry:memStats":                "table",
	"gateway:DefaultArgumentFields":     "table",
	"gateway:InheritedEnv":              "table",
	"gateway:statelessProtocolVersions": "table",
	"gateway:pathMetaVersion":           "table",
	"gateway:keyMetaVersion":            "table",
	"gateway:pathMetaClientCaps":        "table",
	"gateway:removedStateless":          "table",
	"gateway:cacheable":                 "table",
	"gateway:statelessMeta":             "table",
	"gateway:pathMetaSubscriptionID":    "table",
	"gateway:builtinProfiles":           "table",
	"gateway:pathMetaClientName":        "table",
	"gateway:schemaFields":              "table, built on first use (sync.OnceValue)",
	"gateway:inPlaceKeywords":           "table",
	"gateway:clientCapability":          "table",
	"gateway:supportedDownstream":       "table",
	"gateway:relayedCapabilities":       "table",
}

// reviewedPrefix covers families of tables by the start of their names.
var reviewedPrefix = map[string]string{
	"internal:type": "internal/magic's file types: tables",
}

// pkgVar is one package-level variable of a library.
type pkgVar struct {
	key, pos string
	dir      string
}

// libraryFiles parses the non-test Go files of every package but main,
// outside testdata, tools, examples, internal/wasmtest (the tests' build
// cache) and the guest SDK (guest code runs in its own WASM instance, where
// its globals are the instance's), by folder.
func libraryFiles(t *testing.T) (map[string][]*ast.File, *token.FileSet, string) {
	t.Helper()
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	notLibrary := map[string]bool{"tools": true, "examples": true, filepath.Join("sdk", "wasm-guest", "go"): true, filepath.Join("internal", "wasmtest"): true}
	files, fset, err := gosrc.Parse(root, func(rel string) bool { return notLibrary[rel] }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for dir, fs := range files {
		lib := fs[:0]
		for _, f := range fs {
			if f.Name.Name != "main" {
				lib = append(lib, f)
			}
		}
		if len(lib) == 0 {
			delete(files, dir)
		} else {
			files[dir] = lib
		}
	}
	return files, fset, root
}

// exempt reports whether a variable is of a kind that holds no state: a
// sentinel error, a compiled regexp (also one compiled on first use, by a
// sync.OnceValue of a function that returns it), an embedded file, an
// alias of another package's sentinel, or an interface guard.
func exempt(name string, spec *ast.ValueSpec, i int, g *ast.GenDecl) bool {
	if name == "_" {
		return true
	}
	for _, doc := range []*ast.CommentGroup{spec.Doc, g.Doc} {
		if doc != nil && strings.Contains(doc.Text(), "go:embed") {
			return true
		}
		if doc != nil {
			for _, c := range doc.List {
				if strings.HasPrefix(c.Text, "//go:embed") {
					return true
				}
			}
		}
	}
	if i >= len(spec.Values) {
		return false
	}
	switch v := spec.Values[i].(type) {
	case *ast.CallExpr:
		if s, ok := v.Fun.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok {
				switch x.Name + "." + s.Sel.Name {
				case "errors.New", "fmt.Errorf", "regexp.MustCompile":
					return true
				case "sync.OnceValue":
					return len(v.Args) == 1 && returnsRegexp(v.Args[0])
				}
			}
		}
	case *ast.SelectorExpr:
		return strings.HasPrefix(name, "Err") && strings.HasPrefix(v.Sel.Name, "Err")
	}
	return false
}

// returnsRegexp reports whether e is a function literal whose one result
// is a *regexp.Regexp.
func returnsRegexp(e ast.Expr) bool {
	fn, ok := e.(*ast.FuncLit)
	if !ok || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
		return false
	}
	star, ok := fn.Type.Results.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "regexp" && sel.Sel.Name == "Regexp"
}

func libraryVars(t *testing.T) ([]pkgVar, map[string][]*ast.File, *token.FileSet) {
	files, fset, root := libraryFiles(t)
	var vars []pkgVar
	eachSpec(files, token.VAR, func(dir string, g *ast.GenDecl, sp ast.Spec) {
		top := strings.Split(filepath.ToSlash(dir), "/")[0]
		vs := sp.(*ast.ValueSpec)
		for i, n := range vs.Names {
			if exempt(n.Name, vs, i, g) {
				continue
			}
			pos := fset.Position(n.Pos())
			rel, _ := filepath.Rel(root, pos.Filename)
			vars = append(vars, pkgVar{key: top + ":" + n.Name, pos: rel + ":" + itoa(pos.Line), dir: dir})
		}
	})
	sort.Slice(vars, func(i, j int) bool { return vars[i].pos < vars[j].pos })
	return vars, files, fset
}

// eachSpec calls each with every package-level spec of kind tok (var,
// type) in files, with the folder of its package and its declaration.
func eachSpec(files map[string][]*ast.File, tok token.Token, each func(dir string, g *ast.GenDecl, sp ast.Spec)) {
	for dir, fs := range files {
		for _, f := range fs {
			for _, decl := range f.Decls {
				if g, ok := decl.(*ast.GenDecl); ok && g.Tok == tok {
					for _, sp := range g.Specs {
						each(dir, g, sp)
					}
				}
			}
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestPackageVarsReviewed fails on a package-level variable no one has
// reviewed: make it a field of what owns it (an Options field, a Host's),
// or add it to reviewed with the reason it holds no state.
func TestPackageVarsReviewed(t *testing.T) {
	vars, _, _ := libraryVars(t)
	for _, v := range vars {
		_, ok := reviewed[v.key]
		for p := range reviewedPrefix {
			ok = ok || strings.HasPrefix(v.key, p)
		}
		if !ok {
			t.Errorf("%s: package-level var %s: pass the state in from whoever runs the package, or add it to reviewed with the reason it holds none", v.pos, v.key)
		}
	}
}

// TestNoPackageVarIsWritten fails on a library function that assigns to a
// package-level variable (or an element of one), takes its address, or
// increments it: a table must stay as declared. init functions may fill
// tables once.
func TestNoPackageVarIsWritten(t *testing.T) {
	vars, files, fset := libraryVars(t)
	byDir := map[string]map[string]bool{}
	for _, v := range vars {
		if byDir[v.dir] == nil {
			byDir[v.dir] = map[string]bool{}
		}
		byDir[v.dir][strings.SplitN(v.key, ":", 2)[1]] = true
	}
	for dir, names := range byDir {
		for _, f := range files[dir] {
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil || (fn.Recv == nil && fn.Name.Name == "init") {
					continue
				}
				locals := map[string]bool{}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					if a, ok := n.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
						for _, l := range a.Lhs {
							if id, ok := l.(*ast.Ident); ok {
								locals[id.Name] = true
							}
						}
					}
					if vs, ok := n.(*ast.ValueSpec); ok {
						for _, id := range vs.Names {
							locals[id.Name] = true
						}
					}
					return true
				})
				written := func(e ast.Expr, how string) {
					for {
						switch x := e.(type) {
						case *ast.IndexExpr:
							e = x.X
							continue
						case *ast.ParenExpr:
							e = x.X
							continue
						case *ast.Ident:
							if names[x.Name] && !locals[x.Name] {
								t.Errorf("%s: %s %s, a package-level var", fset.Position(x.Pos()), how, x.Name)
							}
						}
						return
					}
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					switch s := n.(type) {
					case *ast.AssignStmt:
						if s.Tok != token.DEFINE {
							for _, l := range s.Lhs {
								written(l, "assigns to")
							}
						}
					case *ast.IncDecStmt:
						written(s.X, "increments")
					case *ast.UnaryExpr:
						if s.Op == token.AND {
							written(s.X, "takes the address of")
						}
					}
					return true
				})
			}
		}
	}
}
