// Package layer is what a layer author needs: the document a layer looks
// at (Doc, its Carriers, Blocks and long Strings), the rewrite language it
// answers in (Rewrite, with its Actions, Targets, Encodings, Forms and the
// bounds Validate holds it to), the Layer interface and its optional
// Closer, Warmer and Clamper, and the registration of a layer kind (Info,
// NewInfo, Register, Registry). Package engine runs layers; an embedder
// needs only it and, for the built-in layers, package layers.
//
// A layer looks and never touches bytes: Plan returns rewrites, and the
// engine executes them (it decodes base64 into the store while hashing and
// splices every replacement in one pass). A layer kind registers from init
// under a name that config switches and tunes per server and per tool:
//
//	func init() {
//		layer.Register(layer.NewInfo("mine", "what it does in one line",
//			func() Options { return Options{MinBytes: 1024} },
//			func(o Options, r layer.Resources) (layer.Layer, error) { return &mine{o: o}, nil }))
//	}
//
// Its options decode strictly from the merged configuration
// (DecodeOptions): an unknown key is an error when the chain is built.
package layer
