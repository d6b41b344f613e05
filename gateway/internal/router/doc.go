// Package router says where a client's request goes: which upstream
// serves an exposed tool, a resource URI or a prompt. Its parts each own
// one table, its state and its lock, and are given at construction only
// the parts they read:
//
//   - Upstreams (upstreams.go): the enabled upstreams by name and in
//     order, their run, and how long a first request waits for them;
//   - Tools (tools.go): the exposed tool names and their Routes, rebuilt
//     when an upstream is ready or its tools change;
//   - URIs (uris.go): which upstream owns a resource URI, and the
//     namespaced form (mcpx://upstream/{server}/{uri}) of a URI two
//     servers list;
//   - Prompts (prompts.go): exposed prompt names, rebuilt on every
//     prompts/list, and completion.
//
// It knows nothing of sessions or transports: the session package asks
// it, and the upstream package's Upstreams answer.
package router
