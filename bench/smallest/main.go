// Command smallest is the smallest program that transforms a result with
// mcpx's engine, the floor BENCHMARKS.md measures `mcpx transform` against (the
// CLI's own cost): it opens the fs store, builds the default engine (the
// built-in layers and the WASM layers they register) and transforms one
// result file to stdout. No flags, config, logging or gateway.
//
//	smallest STORE RESULT.json [SERVER]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpx-dev/mcpx/engine"
	_ "github.com/mcpx-dev/mcpx/layers" // the built-in layers, as cmd/mcpx links them
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "smallest:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: smallest STORE RESULT.json [SERVER]")
	}
	server := "local"
	if len(args) > 2 {
		server = args[2]
	}
	ctx := context.Background()
	in, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	st, err := fsstore.Open(ctx, args[0], fsstore.Config{})
	if err != nil {
		return err
	}
	defer st.Close(ctx)
	eng, err := engine.New(engine.Options{Store: st})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	res, err := eng.Transform(ctx, engine.Call{Server: server}, in)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(res.Raw)
	return err
}
