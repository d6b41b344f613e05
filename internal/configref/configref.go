// Package configref writes mcpx's configuration reference (docs/config.md)
// from the config types themselves, so that a setting is documented in one
// place: the doc comment of the field that declares it. A key's name and
// type come from the struct and its json tag; its meaning from the field's
// doc comment; its default from the Default* constant the comment names
// ("Defaults to DefaultMaxSessions."), whose value is read from the
// compiled package and so is exact, else from the comment's own
// "Defaults to ..." words. A layer's options (pipeline.layers.<name>) take
// their defaults from the value the layer registered, marshalled: exact
// too. A field whose comment states no default (and does not say it is
// required) is listed by Reference.Undocumented, which a test keeps empty.
package configref

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Reference is the configuration tree below one root type, in the order
// of its declaration: each Section is an object of the file, each Key one
// of its members.
type Reference struct {
	// Intro is the root package's doc comment: what a file is.
	Intro string
	// Sections are the objects of the tree, the root ("") first, each
	// followed by the sections below it.
	Sections []Section
}

// Section is one JSON object of the configuration.
type Section struct {
	// Path is the object's place in the file ("serve.limits",
	// "mcpServers.<name>.mcpx"); "" is the root.
	Path string
	// Depth is how many sections enclose it.
	Depth int
	// GoType is the Go type that declares it ("config.Limits").
	GoType string
	// Summary is a layer's one line, for a layer's options; "" otherwise.
	Summary string
	// Doc is the type's doc comment.
	Doc string
	// Keys are the object's members.
	Keys []Key
}

// Key is one member of a section.
type Key struct {
	// Path is the key's full place in the file ("serve.limits.max_sessions").
	Path string
	// Name is the key itself ("max_sessions").
	Name string
	// Type says what value the key takes, for a person ("integer",
	// "duration", "list of string").
	Type string
	// Default is the value the key takes when it is absent, or
	// "required"; "" when the doc comment does not say.
	Default string
	// Doc is the field's doc comment, its Go name replaced by the key.
	Doc string
	// Deprecated says the key is kept only so old files load (its doc
	// comment has a "Deprecated:" paragraph).
	Deprecated bool
	// Section is the path of the section that describes the key's value
	// when it is an object of known shape; "" otherwise.
	Section string
}

// Undocumented returns the keys whose doc comment is missing or states
// no default (a deprecated key need not), by path.
func (r Reference) Undocumented() []string {
	var out []string
	for _, s := range r.Sections {
		for _, k := range s.Keys {
			if k.Doc == "" || (k.Default == "" && k.Section == "" && !k.Deprecated) {
				out = append(out, k.Path)
			}
		}
	}
	return out
}

// ErrNoType is returned by Load when the root type or a layer's options
// are not a struct declared in a package of the module.
var ErrNoType = errors.New("configref: no such struct type")

// ErrEmbedded is returned by Load for a config struct that embeds another
// without naming it in its json tag.
var ErrEmbedded = errors.New("configref: embedded struct")

// LayerOptions are the options of one layer kind, the keys of
// pipeline.layers.<Name> (and of its per-server and per-tool overrides):
// a registry's layer.Info, without the dependency on it.
type LayerOptions struct {
	// Name is the layer's name in config.
	Name string
	// Summary says in one line what the layer does.
	Summary string
	// Defaults is the layer's options struct with its defaults (what
	// layer.Info.Defaults returns): its JSON gives each key's default
	// exactly.
	Defaults any
}

// Load reads the configuration tree below the struct type typeName of
// package pkgPath, a package of the module at dir, then the options of
// each layer as sections of pipeline.layers.
func Load(dir, pkgPath, typeName string, layers []LayerOptions) (Reference, error) {
	l := &loader{dir: dir, types: map[string]*types.Package{}, docs: map[string]*pkgDocs{}}
	root, err := l.pkg(pkgPath)
	if err != nil {
		return Reference{}, err
	}
	tn, ok := root.Scope().Lookup(typeName).(*types.TypeName)
	if !ok {
		return Reference{}, fmt.Errorf("%w: %s.%s", ErrNoType, pkgPath, typeName)
	}
	named, ok := tn.Type().(*types.Named)
	if !ok {
		return Reference{}, fmt.Errorf("%w: %s.%s", ErrNoType, pkgPath, typeName)
	}
	docs, err := l.docsOf(pkgPath)
	if err != nil {
		return Reference{}, err
	}
	ref := Reference{Intro: docs.pkgDoc}
	if err := l.section(&ref, "", 0, named, nil); err != nil {
		return Reference{}, err
	}
	for _, lo := range layers {
		if err := l.layerSection(&ref, lo); err != nil {
			return Reference{}, err
		}
	}
	return ref, nil
}

// layerSection appends the section of one layer's options, its defaults
// read from lo.Defaults' JSON.
func (l *loader) layerSection(ref *Reference, lo LayerOptions) error {
	t := reflect.TypeOf(lo.Defaults)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || t.PkgPath() == "" {
		return fmt.Errorf("%w: layer %s's options are %v", ErrNoType, lo.Name, t)
	}
	p, err := l.pkg(t.PkgPath())
	if err != nil {
		return err
	}
	tn, ok := p.Scope().Lookup(t.Name()).(*types.TypeName)
	if !ok {
		return fmt.Errorf("%w: %s.%s", ErrNoType, t.PkgPath(), t.Name())
	}
	named, ok := tn.Type().(*types.Named)
	if !ok {
		return fmt.Errorf("%w: %s.%s", ErrNoType, t.PkgPath(), t.Name())
	}
	raw, err := json.Marshal(lo.Defaults)
	if err != nil {
		return fmt.Errorf("configref: layer %s's defaults: %w", lo.Name, err)
	}
	var defaults map[string]json.RawMessage
	if err := json.Unmarshal(raw, &defaults); err != nil {
		return fmt.Errorf("configref: layer %s's defaults: %w", lo.Name, err)
	}
	start := len(ref.Sections)
	if err := l.section(ref, "pipeline.layers."+lo.Name, 1, named, defaults); err != nil {
		return err
	}
	ref.Sections[start].Summary = lo.Summary
	return nil
}

// loader caches the packages it has type-checked and parsed.
type loader struct {
	dir    string
	module string // the module's path; packages below it are parsed for docs
	modDir string
	types  map[string]*types.Package
	docs   map[string]*pkgDocs
}

// pkg returns the type-checked package at path; go/packages reads the
// compiler's export data, so constants carry their exact values.
func (l *loader) pkg(path string) (*types.Package, error) {
	if p, ok := l.types[path]; ok {
		return p, nil
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedModule, Dir: l.dir}
	pkgs, err := packages.Load(cfg, path)
	if err != nil {
		return nil, fmt.Errorf("configref: load %s: %w", path, err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 || pkgs[0].Types == nil {
		var msgs []string
		for _, p := range pkgs {
			for _, e := range p.Errors {
				msgs = append(msgs, e.Error())
			}
		}
		return nil, fmt.Errorf("configref: load %s: %s", path, strings.Join(msgs, "; "))
	}
	if l.module == "" && pkgs[0].Module != nil {
		l.module, l.modDir = pkgs[0].Module.Path, pkgs[0].Module.Dir
	}
	l.types[path] = pkgs[0].Types
	return pkgs[0].Types, nil
}

// pkgDocs are the doc comments of one package's declarations.
type pkgDocs struct {
	pkgDoc string
	// typeDoc and fieldDoc are keyed by type name and "Type.Field".
	typeDoc  map[string]string
	fieldDoc map[string]string
	// imports maps a type name to its file's imports, by the name they
	// are used under.
	imports map[string]map[string]string
}

// docsOf parses the non-test files of a package of the module.
func (l *loader) docsOf(path string) (*pkgDocs, error) {
	if d, ok := l.docs[path]; ok {
		return d, nil
	}
	d := &pkgDocs{typeDoc: map[string]string{}, fieldDoc: map[string]string{}, imports: map[string]map[string]string{}}
	l.docs[path] = d
	if l.module == "" || (path != l.module && !strings.HasPrefix(path, l.module+"/")) {
		return d, nil
	}
	dir := filepath.Join(l.modDir, filepath.FromSlash(strings.TrimPrefix(path, l.module)))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("configref: %w", err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("configref: %w", err)
		}
		if f.Doc != nil {
			d.pkgDoc = f.Doc.Text()
		}
		imports := fileImports(f)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				d.typeDoc[ts.Name.Name] = doc.Text()
				d.imports[ts.Name.Name] = imports
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					for _, n := range fld.Names {
						d.fieldDoc[ts.Name.Name+"."+n.Name] = fld.Doc.Text()
					}
				}
			}
		}
	}
	return d, nil
}

// fileImports maps the names a file uses for its imports to their paths.
func fileImports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		p := strings.Trim(imp.Path.Value, `"`)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = p
	}
	return m
}

// section appends the section of the struct type named at path, then the
// sections of its members. defaults, when not nil, are the JSON values of
// its keys when absent (a layer's options): they win over the comments'
// words.
func (l *loader) section(ref *Reference, path string, depth int, named *types.Named, defaults map[string]json.RawMessage) error {
	pkgPath := named.Obj().Pkg().Path()
	docs, err := l.docsOf(pkgPath)
	if err != nil {
		return err
	}
	typeName := named.Obj().Name()
	sec := Section{Path: path, Depth: depth, GoType: named.Obj().Pkg().Name() + "." + typeName, Doc: docs.typeDoc[typeName]}
	idx := len(ref.Sections)
	ref.Sections = append(ref.Sections, sec)
	var below []func() error
	st := named.Underlying().(*types.Struct)
	for i := range st.NumFields() {
		f := st.Field(i)
		name, ok := jsonName(f, st.Tag(i))
		if !ok {
			continue
		}
		if f.Embedded() && !strings.Contains(st.Tag(i), `json:"`) {
			// encoding/json would lift its fields into this object; the
			// reference would list it as one key instead.
			return fmt.Errorf("%w: %s embeds %s, whose keys the reference cannot place", ErrEmbedded, sec.GoType, f.Name())
		}
		k := Key{Path: join(path, name), Name: name}
		doc := docs.fieldDoc[typeName+"."+f.Name()]
		k.Doc = strings.TrimSpace(replaceLeadingName(doc, f.Name(), name))
		k.Type = typeString(f.Type())
		k.Deprecated = strings.Contains(doc, "\nDeprecated: ") || strings.HasPrefix(doc, "Deprecated: ")
		if inner, suffix := objectOf(f.Type()); inner != nil {
			k.Section = k.Path + suffix
			below = append(below, func() error { return l.section(ref, k.Section, depth+1, inner, nil) })
		}
		k.Default, err = l.defaultOf(doc, f.Type(), isBytes(name), pkgPath, docs.imports[typeName])
		if err != nil {
			return fmt.Errorf("configref: %s: %w", k.Path, err)
		}
		if v, ok := defaults[name]; ok && k.Section == "" {
			k.Default = jsonDefault(v, isBytes(name))
		}
		ref.Sections[idx].Keys = append(ref.Sections[idx].Keys, k)
	}
	for _, b := range below {
		if err := b(); err != nil {
			return err
		}
	}
	return nil
}

// jsonName is the key a field is read from, and whether it is read at all.
func jsonName(f *types.Var, tag string) (string, bool) {
	if !f.Exported() {
		return "", false
	}
	name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
	switch name {
	case "-":
		return "", false
	case "":
		return f.Name(), true
	}
	return name, true
}

// isBytes says a key counts bytes ("max_bytes", "max_memory"), so its
// default reads in binary units too.
func isBytes(key string) bool {
	return strings.Contains(key, "bytes") || strings.Contains(key, "memory")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// replaceLeadingName turns "MaxSessions caps ..." into "max_sessions caps ...".
func replaceLeadingName(doc, goName, key string) string {
	if rest, ok := strings.CutPrefix(doc, goName+" "); ok {
		return key + " " + rest
	}
	return doc
}

// objectOf returns the struct type of our module a field's value is (an
// object, a map of objects, a list of objects) and the path suffix of its
// section; nil when the value is not such an object.
func objectOf(t types.Type) (*types.Named, string) {
	suffix := ""
	for {
		switch u := t.(type) {
		case *types.Pointer:
			t = u.Elem()
			continue
		case *types.Map:
			t, suffix = u.Elem(), suffix+".<name>"
			continue
		case *types.Slice:
			if isRawJSON(t) {
				return nil, ""
			}
			t, suffix = u.Elem(), suffix+"[]"
			continue
		case *types.Alias:
			t = types.Unalias(u)
			continue
		}
		break
	}
	n, ok := t.(*types.Named)
	if !ok {
		return nil, ""
	}
	if _, ok := n.Underlying().(*types.Struct); !ok {
		return nil, ""
	}
	return n, suffix
}

func isRawJSON(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "encoding/json" && n.Obj().Name() == "RawMessage"
}

func isDuration(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	return n.Obj().Name() == "Duration" && (n.Obj().Pkg().Path() == "time" || strings.HasSuffix(n.Obj().Pkg().Path(), "/store"))
}

// typeString says what a value of t is, in JSON's words.
func typeString(t types.Type) string {
	t = types.Unalias(t)
	switch {
	case isRawJSON(t):
		return "JSON value"
	case isDuration(t):
		return `duration ("30s", or seconds)`
	}
	switch u := t.(type) {
	case *types.Pointer:
		return typeString(u.Elem())
	case *types.Slice:
		return "list of " + typeString(u.Elem())
	case *types.Map:
		return "map of names to " + typeString(u.Elem())
	case *types.Named:
		if _, ok := u.Underlying().(*types.Struct); ok {
			return "object"
		}
		return typeString(u.Underlying())
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			return "boolean"
		case u.Info()&types.IsInteger != 0:
			return "integer"
		case u.Info()&types.IsFloat != 0:
			return "number"
		case u.Info()&types.IsString != 0:
			return "string"
		}
	}
	return t.String()
}

// defaultsTo finds the "Defaults to ..." sentence of a doc comment, and
// constIdent a Default* constant at its start.
var (
	defaultsTo = regexp.MustCompile(`(?s)\bDefaults\s+to\s+(.*)`)
	constIdent = regexp.MustCompile(`^(?:([a-z][A-Za-z0-9]*)\.)?(Default[A-Z][A-Za-z0-9]*)\b`)
	required   = regexp.MustCompile(`\bRequired\b`)
)

// defaultOf reads the default a field's doc comment states: the value of
// the Default* constant it names, else its own words; "required" for a
// field that says so.
func (l *loader) defaultOf(doc string, t types.Type, bytes bool, pkgPath string, imports map[string]string) (string, error) {
	m := defaultsTo.FindStringSubmatch(doc)
	if m == nil {
		if required.MatchString(doc) {
			return "required", nil
		}
		return "", nil
	}
	words := strings.Join(strings.Fields(sentence(m[1])), " ")
	c := constIdent.FindStringSubmatch(words)
	if c == nil {
		return words, nil
	}
	path := pkgPath
	if c[1] != "" {
		p, ok := imports[c[1]]
		if !ok {
			return words, nil // a package the file does not import: keep the words
		}
		path = p
	}
	p, err := l.pkg(path)
	if err != nil {
		return "", err
	}
	k, ok := p.Scope().Lookup(c[2]).(*types.Const)
	if !ok {
		return words, nil // a function or variable: its words say what it gives
	}
	v := formatConst(k, t, bytes)
	switch rest := strings.TrimSpace(strings.TrimPrefix(words, c[0])); {
	case rest == "" || strings.HasPrefix(rest, "("):
		// the rest repeats the value in words
	case strings.HasPrefix(rest, ";") || strings.HasPrefix(rest, ","):
		v += rest
	default:
		v += " " + rest
	}
	return v, nil
}

// jsonDefault renders a default read from JSON; a byte count also in
// binary units.
func jsonDefault(v json.RawMessage, bytes bool) string {
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && bytes {
		return bytesString(n)
	}
	return string(v)
}

// sentence cuts s at the end of its first sentence: a period followed by
// a space or the end, outside parentheses.
func sentence(s string) string {
	depth := 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case '.':
			if depth <= 0 && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n') {
				return s[:i]
			}
		}
	}
	return strings.TrimSpace(s)
}

// formatConst renders a constant as a value of the field's type; a byte
// count also in binary units.
func formatConst(k *types.Const, field types.Type, bytes bool) string {
	v := k.Val()
	switch v.Kind() {
	case constant.String:
		return fmt.Sprintf("%q", constant.StringVal(v))
	case constant.Int:
		n, exact := constant.Int64Val(v)
		if !exact {
			return v.ExactString()
		}
		if isDuration(field) || isDuration(k.Type()) {
			return durationString(n)
		}
		if bytes {
			return bytesString(n)
		}
		return fmt.Sprint(n)
	}
	return v.ExactString()
}

// durationString renders nanoseconds as Go's time.Duration does, without
// its trailing zero units ("2m", not "2m0s").
func durationString(n int64) string {
	for _, u := range []struct {
		ns   int64
		name string
	}{{3600e9, "h"}, {60e9, "m"}, {1e9, "s"}, {1e6, "ms"}} {
		if n >= u.ns && n%u.ns == 0 {
			return fmt.Sprintf("%d%s", n/u.ns, u.name)
		}
	}
	return fmt.Sprintf("%dns", n)
}

// bytesString renders a byte count, with its binary size when it is a
// whole number of KiB, MiB or GiB ("67108864 (64 MiB)").
func bytesString(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d (%d %s)", n, n>>u.shift, u.name)
		}
	}
	return fmt.Sprint(n)
}
