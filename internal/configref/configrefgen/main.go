// Command configrefgen writes docs/config.md, the configuration reference,
// from the config types' doc comments (see package configref). It is run
// by "go generate ./internal/configref", not installed.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpx-dev/mcpx/internal/configref"
	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "configrefgen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := gosrc.Root(".")
	if err != nil {
		return err
	}
	md, err := configref.Generate(root)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, configref.Output), md, 0o644)
}
