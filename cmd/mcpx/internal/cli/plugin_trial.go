package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// trial is one run of a plugin over one result, and what the engine made
// of its rewrites: what `mcpx plugin test` shows a plugin's author.
type trial struct {
	// rewrites are what the plugin returned.
	rewrites []layer.Rewrite
	// result is the result with the rewrites applied: its artifacts are in
	// the store of the Options passed to tryPlugin, its failures the
	// rewrites the engine refused.
	result engine.Result
	// took is the plugin's own run, without the engine's.
	took time.Duration
}

// tryPlugin runs p over result in mode, then applies the rewrites it
// returns with an engine built from o (its Store and Logger; the chain is
// the plugin's rewrites alone, so the result shows the plugin's work and
// no other layer's). A result that is not JSON, a plugin that fails and an
// engine that cannot start are errors; a rewrite the engine refuses is in
// trial.result.Failures.
func tryPlugin(ctx context.Context, p *wasm.Plugin, call engine.Call, result []byte, mode wasm.Mode, o engine.Options) (trial, error) {
	d := layer.NewDoc(call, result)
	if err := d.Err(); err != nil {
		return trial{}, fmt.Errorf("result: %w", err)
	}
	start := time.Now()
	rws, err := p.Run(ctx, d, mode)
	took := time.Since(start)
	if err != nil {
		return trial{}, err
	}
	o.Registry = layer.NewRegistry()
	o.Registry.Register(layer.Info{Name: "plugin", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) {
		return fixedRewrites(rws), nil
	}})
	o.Config = engine.Config{Chain: []string{"plugin"}}
	eng, err := engine.New(o)
	if err != nil {
		return trial{}, err
	}
	defer eng.Close(ctx)
	res, err := eng.Transform(ctx, call, result)
	if err != nil {
		return trial{}, err
	}
	return trial{rewrites: rws, result: *res, took: took}, nil
}

// fixedRewrites is a layer that plans the rewrites it was given.
type fixedRewrites []layer.Rewrite

// Plan returns the rewrites.
func (f fixedRewrites) Plan(context.Context, *layer.Doc) ([]layer.Rewrite, error) { return f, nil }
