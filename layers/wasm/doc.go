// Package wasm runs mcpx plugins: sandboxed WebAssembly modules, executed by
// wazero, that look at a tool result and return rewrites in the engine's
// rewrite language (or, in custom mode, a replacement payload).
//
// The guest contract is sdk/wasm-guest/ABI.md (ABI v1). A Host owns the
// compilation cache and makes Plugins; a Plugin is one compiled module with
// a pool of instances, so concurrent calls never share guest memory. Every
// call runs under a deadline, a memory cap and an output cap; a trap, a
// timeout, an over-limit output or a malformed response discards the
// instance and fails the call with an error that names the plugin, which
// the engine turns into a skipped step (a layer_failed event) while the
// result flows on untouched.
//
// Importing the package registers two engine layers:
//
//   - "custom" (L5): the plugin files configured per server and tool, and
//     those of a watched plugins folder (hot loaded); such a plugin may
//     return rewrites or replace the payload outright.
//   - "presets" (L4): the presets embedded in the binary (tableau, github),
//     chosen per server by name and compiled lazily on the first call that
//     matches.
package wasm
