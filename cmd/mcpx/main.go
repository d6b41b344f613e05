// Command mcpx keeps binary and oversized MCP tool output out of an LLM's
// context: it moves base64 blobs and oversized text from tool results into
// an artifact store and leaves a compact reference and summary in place.
//
// Run "mcpx --help" for the subcommands.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
