package layers

import (
	"context"
	"fmt"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

func init() {
	layer.Register(layer.NewInfo("fields",
		"declarative per-tool extraction of named fields",
		nil, func(o FieldsOptions, _ layer.Resources) (layer.Layer, error) { return newFields(o) }))
}

// FieldsOptions configure the fields layer. Rules are set per server and
// tool in engine.Config, e.g. under
// servers.tableau.tools.download_workbook.layers.fields.
type FieldsOptions struct {
	// Rules name the fields to extract. Defaults to none.
	Rules []FieldRule `json:"rules"`
}

// FieldRule names one field and what to do with it.
type FieldRule struct {
	// Path is a gjson path in the payload; # and * match every index or
	// key ("artifacts.#.data"). Required.
	Path string `json:"path"`
	// Target is "payload" or "result" for the whole CallToolResult.
	// Defaults to "payload".
	Target layer.Target `json:"target,omitempty"`
	// Action is "artifact", "truncate" or "drop". Defaults to "artifact".
	Action layer.Action `json:"action,omitempty"`
	// Encoding of the value: "base64", "text", "json" or "auto". Defaults
	// to "base64".
	Encoding layer.Encoding `json:"encoding,omitempty"`
	// Verify refuses base64 that does not decode to a known signature.
	// Defaults to false.
	Verify bool `json:"verify,omitempty"`
	// MIME of the artifact. Defaults to "": detected from the bytes.
	MIME string `json:"mime,omitempty"`
	// Filename template, e.g. "{.name}.pdf". Defaults to "": the name the
	// engine gives (from the call's arguments, else none).
	Filename string `json:"filename,omitempty"`
	// Summary template: the rule's own words, e.g. "Downloaded workbook
	// '{.name}'"; the engine appends what the bytes are, the artifact's id
	// and URI and how to read further, unless the template names them
	// ({content}, {uri}, {hint}; sdk/wasm-guest/ABI.md, Summaries).
	// Defaults to "": the engine's summary alone.
	Summary string `json:"summary,omitempty"`
	// Keep: characters, items or members kept by truncate; preview
	// characters for a text artifact. Defaults to 0.
	Keep int `json:"keep,omitempty"`
	// MinSize leaves values whose JSON is shorter than this alone.
	// Defaults to 0: every value.
	MinSize int `json:"min_size,omitempty"`
}

type fields struct{ rws []layer.Rewrite }

func newFields(o FieldsOptions) (*fields, error) {
	l := &fields{}
	for i, r := range o.Rules {
		if r.Path == "" {
			return nil, fmt.Errorf("rules[%d]: path is required", i)
		}
		if _, err := jsonwalk.ParsePath(r.Path); err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
		rw := layer.Rewrite{
			Path: r.Path, Target: r.Target, Action: r.Action, Encoding: r.Encoding,
			Verify: r.Verify, MIME: r.MIME, Filename: r.Filename, Summary: r.Summary,
			Keep: r.Keep, MinSize: r.MinSize,
		}
		if rw.Action == "" {
			rw.Action = layer.ActionArtifact
		}
		switch rw.Action {
		case layer.ActionArtifact, layer.ActionTruncate, layer.ActionDrop:
		default:
			return nil, fmt.Errorf("rules[%d]: action %q: want artifact, truncate or drop", i, r.Action)
		}
		if rw.Encoding == "" {
			rw.Encoding = layer.EncodingBase64
		}
		switch rw.Target {
		case "", layer.TargetPayload, layer.TargetResult:
		default:
			return nil, fmt.Errorf("rules[%d]: target %q: want payload or result", i, r.Target)
		}
		l.rws = append(l.rws, rw)
	}
	return l, nil
}

// Plan returns the configured rewrites; the engine skips paths that are
// absent.
func (l *fields) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	return l.rws, nil
}

var _ layer.Layer = (*fields)(nil)
