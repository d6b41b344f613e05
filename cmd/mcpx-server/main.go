// Command mcpx-server is mcpx with every part: the commands of mcpx, and
// the S3 store and the gateway's Prometheus metrics and OpenTelemetry
// traces, which mcpx hands to it ("mcpx serve" runs "mcpx-server serve").
// Install both:
//
//	go install github.com/mcpx-dev/mcpx/cmd/mcpx github.com/mcpx-dev/mcpx/cmd/mcpx-server
package main

import (
	"os"

	"github.com/mcpx-dev/mcpx/internal/cli"
	"github.com/mcpx-dev/mcpx/internal/cli/serverparts"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, serverparts.Set()))
}
