// Package compat holds mcpx's compatibility matrix: real MCP servers from
// npm (server-filesystem, server-memory, server-pdf, server-everything,
// server-sequential-thinking) behind the built mcpx binary (`mcpx wrap`),
// driven by real clients (the TypeScript SDK, the inspector CLI, the go-sdk
// and mcp-go clients), each call compared with the same client's direct
// call. The package has only tests; docs/compatibility.md is generated from
// them (go test ./tests/compat -update).
package compat
