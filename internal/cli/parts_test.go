package cli

import (
	"io"

	"github.com/mcpx-dev/mcpx/internal/cli/serverparts"
)

// run is the CLI of cmd/mcpx-server, as the tests run it in process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Run(args, stdin, stdout, stderr, serverparts.Set())
}
