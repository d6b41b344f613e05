// Package plugins holds the WASM presets built into mcpx: each preset's
// source is a main package in a folder of its own (tableau/, github/),
// written with the Go guest SDK (sdk/wasm-guest/go), and its built module
// is committed beside it and embedded here, so that "go install" users need
// no WASM toolchain. scripts/build-wasm.sh rebuilds them and the test
// command fails when a committed module differs from a fresh build.
//
// The package is data (each preset's module and the server names it
// serves) and imports nothing of mcpx: layers/wasm runs what Catalog
// lists (wasm.HostOptions.Presets).
package plugins

import (
	_ "embed"
	"sort"
)

// The presets are built with TinyGo v0.42.0 (scripts/wasm-toolchains.sh
// installs it), whose modules are ten times smaller than the standard
// toolchain's and load in milliseconds rather than a hundred, and
// without gjson's path modifiers, which halves them again (a preset reads
// plain paths). From the repository root:
//
//	tinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -ldflags='-X github.com/tidwall/gjson.disableModifiers=true' -o plugins/tableau/tableau.wasm ./plugins/tableau
//	tinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -ldflags='-X github.com/tidwall/gjson.disableModifiers=true' -o plugins/github/github.wasm ./plugins/github
//
// The same sources build with the standard toolchain too (the tests run
// both builds):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o tableau.wasm ./plugins/tableau

//go:embed tableau/tableau.wasm
var tableauWasm []byte

//go:embed github/github.wasm
var githubWasm []byte

// Preset is a module built into a binary that the presets layer runs for
// the servers its globs match.
type Preset struct {
	// Name is the preset's name in config and on the command line.
	Name string
	// Summary is one line for docs.
	Summary string
	// Servers are the server-name globs (path.Match) the preset applies to
	// unless the config names presets explicitly.
	Servers []string
	// Wasm is the module.
	Wasm []byte
	// CandidatesOnly says the preset rewrites nothing but the request's
	// candidates (the long strings, sdk/wasm-guest/ABI.md): on a result
	// without one it answers no rewrites, so the presets layer neither
	// loads nor runs it there (loading is most of a small result's cost in
	// a fresh process). The tests hold each preset that claims it to it.
	CandidatesOnly bool
}

// presets is never written after init.
var presets = map[string]Preset{
	"tableau": {
		Name:    "tableau",
		Summary: "Tableau MCP servers: workbook downloads, view PDFs and images, CSV and crosstab exports",
		Servers: []string{"tableau", "tableau*", "*tableau*"},
		Wasm:    tableauWasm,
		// CandidatesOnly: transform ranges over req.Candidates() alone.
		CandidatesOnly: true,
	},
	"github": {
		Name:    "github",
		Summary: "GitHub MCP servers: file contents, release assets and attachments, large diffs and job logs",
		Servers: []string{"github", "github*", "*github*"},
		Wasm:    githubWasm,
		// CandidatesOnly: transform ranges over req.Candidates() alone.
		CandidatesOnly: true,
	},
}

// Lookup returns the preset called name.
func Lookup(name string) (Preset, bool) {
	i, ok := presets[name]
	return i, ok
}

// Names lists the presets, sorted.
func Names() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Catalog returns every preset, sorted by name, for wasm.HostOptions.Presets.
func Catalog() []Preset {
	out := make([]Preset, 0, len(presets))
	for _, n := range Names() {
		out = append(out, presets[n])
	}
	return out
}
