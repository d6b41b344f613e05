// Command mcpx keeps binary and oversized MCP tool output out of an LLM's
// context: it moves base64 blobs and oversized text from tool results into
// an artifact store and leaves a compact reference and summary in place.
//
// Run "mcpx --help" for the subcommands. One binary has every command: the
// gateway of "mcpx serve" and "mcpx wrap", jq and the S3 store are linked
// in; start-up stays lean by what that links (cmd/mcpx/internal/cli's TestBinaryLinks).
// From a clone of the repository:
//
//	CGO_ENABLED=0 go install ./cmd/mcpx
package main

import (
	"os"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli"
	_ "github.com/mcpx-dev/mcpx/store/s3store" // "store": {"s3": …}
)

func main() { os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
