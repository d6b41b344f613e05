// Package engine rewrites MCP tool results so that blobs and oversized text
// become artifacts in a store and the model sees a compact ArtifactRef and an
// honest summary.
//
// An Engine runs an ordered chain of layers over each result. A layer looks
// at the result (a Doc) and returns Rewrites; the engine executes them:
// it decodes base64 straight from the document into the store while hashing,
// and splices every replacement in one pass by byte offset. Layers are
// registered by name (package layers registers the built-in ones) and are
// switched and tuned per server and per tool by Config.
//
// Embedding takes a store, the layers and a call:
//
//	st, _ := fsstore.Open(ctx, dir, fsstore.Config{})
//	eng, _ := engine.New(engine.Options{Store: st})
//	res, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, raw)
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
//   - Every field of a Rewrite is bounded (MaxKeep, MaxMinSize,
//     MaxPathComponents, MaxCreatedLevels, MaxValueDepth, MaxTemplateBytes,
//     MaxMIMEBytes, MaxMetaEntries: see Rewrite.Validate). A step's rewrites
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
