package layers

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

func init() {
	layer.Register(layer.NewInfo("typedcontent",
		"MCP image, audio and embedded resource blocks become artifacts plus a resource_link",
		defaultTypedContent, func(o TypedContentOptions, _ layer.Resources) (layer.Layer, error) { return newTypedContent(o) }))
}

// TypedContentOptions tune the typedcontent layer (docs/design.md, "The chain").
type TypedContentOptions struct {
	// InlineImagesUnderBytes keeps images of fewer decoded bytes inline,
	// for vision models. Defaults to 0: every image becomes an artifact.
	InlineImagesUnderBytes int64 `json:"inline_images_under_bytes"`
	// InlineAudioUnderBytes does the same for audio. Defaults to 0.
	InlineAudioUnderBytes int64 `json:"inline_audio_under_bytes"`
	// InlineTextIfUnderChars keeps embedded text resources of fewer
	// characters inline; longer ones become text artifacts. Defaults to
	// 10000.
	InlineTextIfUnderChars int `json:"inline_text_if_under_chars"`
	// Summary is the summary template. Defaults to "": the engine's
	// default summary.
	Summary string `json:"summary,omitempty"`
}

func defaultTypedContent() TypedContentOptions {
	return TypedContentOptions{InlineTextIfUnderChars: 10000}
}

type typedContent struct{ o TypedContentOptions }

func newTypedContent(o TypedContentOptions) (*typedContent, error) {
	if o.InlineImagesUnderBytes < 0 || o.InlineAudioUnderBytes < 0 || o.InlineTextIfUnderChars < 0 {
		return nil, fmt.Errorf("inline thresholds must not be negative")
	}
	return &typedContent{o: o}, nil
}

// Plan turns typed blocks into artifact blocks.
func (l *typedContent) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	if !d.IsMCP() {
		return nil, nil
	}
	var out []layer.Rewrite
	for i, b := range d.Blocks() {
		if i&255 == 255 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var keep bool
		switch b.Type {
		case "image", "audio":
			limit := l.o.InlineImagesUnderBytes
			if b.Type == "audio" {
				limit = l.o.InlineAudioUnderBytes
			}
			data, ok := jsonwalk.Member(d.Raw, b.Off, "data")
			if !ok {
				continue
			}
			keep = int64(data.End-data.Off-2)*3/4 < limit
		case "resource":
			res, ok := jsonwalk.Member(d.Raw, b.Off, "resource")
			if !ok {
				continue
			}
			if _, blob := jsonwalk.Member(d.Raw, res.Off, "blob"); !blob {
				text, ok := jsonwalk.Member(d.Raw, res.Off, "text")
				if !ok {
					continue
				}
				keep = text.End-text.Off-2 < l.o.InlineTextIfUnderChars
			}
		default:
			continue
		}
		if keep {
			continue
		}
		out = append(out, layer.Rewrite{
			Path: "content." + strconv.Itoa(b.Index), Target: layer.TargetResult,
			Action: layer.ActionArtifact, Form: layer.FormBlock, Summary: l.o.Summary,
		})
	}
	return out, nil
}

var _ layer.Layer = (*typedContent)(nil)
