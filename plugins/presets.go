// Package plugins holds the WASM presets built into mcpx: each preset's
// source is a main package in a folder of its own (tableau/, github/),
// written with the Go guest SDK (sdk/wasm-guest/go), and its built module
// is committed beside it and embedded here, so that "go install" users need
// no WASM toolchain. scripts/build-wasm.sh rebuilds them and the test
// command fails when a committed module differs from a fresh build.
package plugins

import (
	_ "embed"
	"sort"

	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// The presets are built with TinyGo v0.42.0 (scripts/wasm-toolchains.sh
// installs it), whose modules are ten times smaller than the standard
// toolchain's and load in milliseconds rather than a hundred. From the
// repository root:
//
//	tinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -o plugins/tableau/tableau.wasm ./plugins/tableau
//	tinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -o plugins/github/github.wasm ./plugins/github
//
// The same sources build with the standard toolchain too (the tests run
// both builds):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o tableau.wasm ./plugins/tableau

//go:embed tableau/tableau.wasm
var tableauWasm []byte

//go:embed github/github.wasm
var githubWasm []byte

// Info describes a built-in preset: its name, summary, server globs,
// module and whether it rewrites candidates only (wasm.Preset). The tests
// hold each preset that claims CandidatesOnly to it.
type Info = wasm.Preset

// presets is never written after init.
var presets = map[string]Info{
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
func Lookup(name string) (Info, bool) {
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

// Catalog returns every preset, sorted by name, for wasm.HostOptions.Presets
// and wasm.Layers.
func Catalog() []wasm.Preset {
	out := make([]wasm.Preset, 0, len(presets))
	for _, n := range Names() {
		out = append(out, presets[n])
	}
	return out
}
