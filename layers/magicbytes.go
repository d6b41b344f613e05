package layers

import (
	"context"
	"fmt"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/magic"
)

func init() {
	layer.Register(layer.NewInfo("magicbytes",
		"base64 strings anywhere in the result that decode to a known file signature become artifacts",
		defaultMagicBytes, func(o MagicBytesOptions, _ layer.Resources) (layer.Layer, error) { return newMagicBytes(o) }))
}

// MagicBytesOptions tune the magicbytes layer (docs/design.md, "The chain").
type MagicBytesOptions struct {
	// MinSizeForDetection skips strings shorter than this many characters.
	// Defaults to 1000.
	MinSizeForDetection int `json:"min_size_for_detection"`
	// RequireMagicBytes stores only bytes whose first bytes are a known
	// signature (PDF, PNG, ZIP, ...). Off, any valid base64 string of the
	// minimum size is stored as application/octet-stream. Defaults to true.
	RequireMagicBytes bool `json:"require_magic_bytes"`
	// MIMETypes, when set, limits detection to these media types.
	// Defaults to none: every type with a known signature.
	MIMETypes []string `json:"mime_types,omitempty"`
	// Summary is the summary template. Defaults to "": the engine's
	// default summary.
	Summary string `json:"summary,omitempty"`
}

func defaultMagicBytes() MagicBytesOptions {
	return MagicBytesOptions{MinSizeForDetection: 1000, RequireMagicBytes: true}
}

type magicBytes struct {
	o     MagicBytesOptions
	allow map[string]bool
}

func newMagicBytes(o MagicBytesOptions) (*magicBytes, error) {
	if o.MinSizeForDetection < 4 {
		return nil, fmt.Errorf("min_size_for_detection must be at least 4, got %d", o.MinSizeForDetection)
	}
	l := &magicBytes{o: o}
	if len(o.MIMETypes) > 0 {
		l.allow = map[string]bool{}
		for _, m := range o.MIMETypes {
			l.allow[m] = true
		}
	}
	return l, nil
}

// Plan finds base64 strings with a verified signature.
func (l *magicBytes) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	var out []layer.Rewrite
	err := walkStrings(ctx, d, l.o.MinSizeForDetection, func(s stringVisit) {
		if !b64.Looks(s.Body, l.o.MinSizeForDetection) {
			return
		}
		head, err := b64.DecodeHead(s.Body, magic.HeadSize)
		if err != nil {
			return
		}
		typ, ok := magic.Detect(head)
		if !ok && l.o.RequireMagicBytes {
			return
		}
		if ok && l.allow != nil && !l.allow[typ.MIME] {
			return
		}
		if !ok {
			// Without a signature only a string that is base64 all through
			// counts; Parse scans it once.
			if _, err := b64.Parse(s.Body); err != nil {
				return
			}
		}
		out = append(out, layer.Rewrite{
			Path: s.Path, Target: s.Target, Form: s.Form,
			Action: layer.ActionArtifact, Encoding: layer.EncodingBase64,
			// No MIME: the engine detects it from each value's bytes, so
			// two values under one key ({"a": PDF, "a": PNG}) keep theirs.
			Verify: l.o.RequireMagicBytes, Summary: l.o.Summary,
		})
	})
	return out, err
}

var _ layer.Layer = (*magicBytes)(nil)
