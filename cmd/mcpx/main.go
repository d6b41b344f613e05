// Command mcpx keeps binary and oversized MCP tool output out of an LLM's
// context: it moves base64 blobs and oversized text from tool results into
// an artifact store and leaves a compact reference and summary in place.
//
// Run "mcpx --help" for the subcommands. This binary links neither the S3
// store nor the gateway's metrics and tracing, so that "mcpx transform",
// run once per result, starts fast; it hands "serve", "wrap" and the
// commands on an S3 store to mcpx-server (cmd/mcpx-server), found beside
// it or on PATH.
package main

import (
	"os"

	"github.com/mcpx-dev/mcpx/internal/cli"
	"github.com/mcpx-dev/mcpx/internal/cli/parts"
)

func main() { os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, parts.Set{})) }
