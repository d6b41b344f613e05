package layers

import (
	"context"
	"fmt"

	"github.com/mcpx-dev/mcpx/engine/layer"
)

func init() {
	layer.Register(layer.NewInfo("sizenet",
		"any string still over max_inline_size becomes a text artifact with a preview",
		defaultSizeNet, func(o SizeNetOptions, _ layer.Resources) (layer.Layer, error) { return newSizeNet(o) }))
}

// SizeNetOptions tune the sizenet layer (docs/design.md, "The chain").
type SizeNetOptions struct {
	// MaxInlineSize is the longest string, in JSON-encoded characters, left
	// in place. Defaults to 10000.
	MaxInlineSize int `json:"max_inline_size"`
	// PreviewChars is how much of the text the model still sees. Defaults
	// to 200.
	PreviewChars int `json:"preview_chars"`
	// Summary is the summary template. Defaults to "": the engine's
	// default summary.
	Summary string `json:"summary,omitempty"`
}

func defaultSizeNet() SizeNetOptions {
	return SizeNetOptions{MaxInlineSize: 10000, PreviewChars: 200}
}

type sizeNet struct{ o SizeNetOptions }

func newSizeNet(o SizeNetOptions) (*sizeNet, error) {
	if o.MaxInlineSize < 1 {
		return nil, fmt.Errorf("max_inline_size must be positive, got %d", o.MaxInlineSize)
	}
	if o.PreviewChars < 0 || o.PreviewChars > o.MaxInlineSize {
		return nil, fmt.Errorf("preview_chars must be between 0 and max_inline_size, got %d", o.PreviewChars)
	}
	return &sizeNet{o: o}, nil
}

// Plan moves oversized strings into text artifacts.
func (l *sizeNet) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	var out []layer.Rewrite
	err := walkStrings(ctx, d, l.o.MaxInlineSize+1, func(s stringVisit) {
		out = append(out, layer.Rewrite{
			Path: s.Path, Target: s.Target, Form: s.Form,
			Action: layer.ActionArtifact, Encoding: layer.EncodingText,
			Keep: l.o.PreviewChars, Summary: l.o.Summary,
		})
	})
	return out, err
}

var _ layer.Layer = (*sizeNet)(nil)
