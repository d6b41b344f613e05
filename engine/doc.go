// Package engine rewrites MCP tool results so that blobs and oversized text
// become artifacts in a store and the model sees a compact ArtifactRef and an
// honest summary.
//
// An Engine runs an ordered chain of layers over each result. A layer looks
// at the result and returns rewrites; the engine executes them: it decodes
// base64 straight from the document into the store while hashing, and
// splices every replacement in one pass by byte offset. Layers are
// registered by name and switched and tuned per server and per tool by
// Config; package layer is what a layer author needs.
//
// Embedding takes a store, the layers and a call. Importing package layers
// registers every layer of the default chain (docs/design.md, "The
// chain") in the default registry, the WASM ones (custom, presets)
// included; the engine knows nothing of WASM. Those WASM layers run on a
// host they make on first need and close with the last of them
// (wasm.LayersOnDemand); a host that runs several engines, or wants its own
// cache folder, logger or limits, makes a wasm.Host, binds the WASM layers
// to it in a registry of its own, and closes it after the engine:
//
//	import (
//		"github.com/mcpx-dev/mcpx/engine"
//		"github.com/mcpx-dev/mcpx/engine/layer"
//		_ "github.com/mcpx-dev/mcpx/layers"
//		"github.com/mcpx-dev/mcpx/layers/wasm"
//		"github.com/mcpx-dev/mcpx/plugins"
//	)
//
//	st, _ := fsstore.Open(ctx, dir, fsstore.Config{})
//	host, _ := wasm.NewHost(ctx, wasm.HostOptions{Presets: plugins.Catalog()})
//	defer host.Close(ctx)
//	reg := layer.DefaultRegistry().With(wasm.Layers(host)...)
//	eng, _ := engine.New(engine.Options{Store: st, Registry: reg})
//	defer eng.Close(ctx)
//	res, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, raw)
//
// A layer named in Config that no import registered is an error from New
// that names package layers.
//
// # Limits
//
// Every cost is linear in the size of the result, and bounded:
//
//   - Config.MaxDepth (DefaultMaxDepth, 10,000 levels): a deeper result is
//     stored whole as one artifact and replaced by a note that names it
//     (ErrTooDeep in Result.Failures).
//   - Config.MaxArtifactsPerResult (DefaultMaxArtifactsPerResult, 100): the
//     layers before the guardrail store at most this many artifacts per
//     result; later values stay in place, where the guardrail cuts them
//     (storing what it cuts), and the result ends with a note for the model.
//   - Config.MaxArtifactBytes (1 GiB) per artifact.
//   - Every field of a rewrite is bounded (layer.MaxKeep and the other
//     bounds of layer.Rewrite.Validate). A step's rewrites
//     are validated as a whole: one invalid rewrite and none applies. A
//     panic while a step executes fails that step, not the process.
//   - A step reports at most 8 failures (logged at WARN, sent as events)
//     and one more that counts the rest (ErrFailuresElided).
//   - A done context stops every built-in layer and the executor.
//
// # Bytes
//
// Strings are kept byte-exact: bytes that are not valid UTF-8 pass to the
// output unchanged and are stored as they came; a text holding a lone
// UTF-16 surrogate escape ("\ud800"), which UTF-8 cannot hold, is stored as
// its JSON string literal (application/json); base64 whose last character
// carries set padding bits ("TOKabc", which decodes as "TOKabQ" does) is
// stored as the string itself. Values that replace and drop remove (over
// 1 KiB) are stored and listed under "mcpx/stored" in the result's _meta
// ("_mcpx" of a non-MCP object).
package engine
