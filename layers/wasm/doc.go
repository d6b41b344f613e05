// Package wasm runs mcpx plugins: sandboxed WebAssembly modules, executed by
// wazero, that look at a tool result and return rewrites in the engine's
// rewrite language (or, in custom mode, a replacement payload).
//
// The guest contract is sdk/wasm-guest/ABI.md (ABI v1). A Host owns the
// compilation cache and makes Plugins; a Plugin is one compiled module with
// a pool of instances, so concurrent calls never share guest memory, and a
// pooled instance serves one principal only (server, tenant, user): what a
// guest keeps in memory never reaches another server's or tenant's call.
// Every
// call runs under a deadline, a memory cap and an output cap; a trap, a
// timeout, an over-limit output or a malformed response discards the
// instance and fails the call with an error that names the plugin, which
// the engine turns into a skipped step (a layer_failed event) while the
// result flows on untouched.
//
// Host functions stay inside the same limits: host.get_value and
// host.get_config take plain paths (keys and indexes with `\` escapes; see
// valuepath.go for the grammar) and answer -4 to anything else (gjson
// modifiers, pipes, queries, multipaths, wildcards), slice values out of the
// document without building them, check the get_value budget before
// copying, and answer -5 once the call's deadline passed. host.log escapes
// control characters, so a guest cannot forge log lines or drive a
// terminal, and keeps to 64 lines per call (initialization included).
//
// A plugins folder reads regular files only (a symlink is followed to a
// regular file; FIFOs, devices, sockets and folders fail to load), each
// under a size cap (64 MiB by default), with a read deadline. A file name
// is a name, not a glob. Host.SetServers names the servers an embedder
// serves, so a folder plugin that serves none of them is a warning.
//
// Two engine layer kinds run plugins:
//
//   - "custom": the plugin files configured per server and tool, and
//     those of a watched plugins folder (hot loaded); such a plugin may
//     return rewrites or replace the payload outright.
//   - "presets": the presets a Host was given (HostOptions.Presets,
//     package plugins' catalog for mcpx), chosen per server by name and
//     compiled lazily on the first call that matches.
//
// The Host is captured by the kinds, never handed through the engine:
// Layers(h) binds them to a Host the caller owns (an embedder registers
// them with layer.Registry.With), so that one compilation cache and one
// set of compiled modules serve every server and tool; LayersOnDemand
// binds them to a Host they make on first need and close with the last
// layer built from them, which is what package layers registers in the
// default registry. The package holds no process-wide state.
package wasm
