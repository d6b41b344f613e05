package layer

// What the client on the other end of a call can take: a host (the
// gateway) knows its client and passes a View with each call; the engine
// and the layers fit the result to it.

import "fmt"

// View is what one call's client takes, set by the host per call
// (Call.View). The zero value is the engine's configured behaviour.
type View struct {
	// Profile names the client profile the view came from ("claude-code");
	// informational, for logs and events.
	Profile string `json:"profile,omitempty"`
	// MaxObservationChars, when positive, lowers the guardrail's budget
	// for this call (never raises it: the configured budget is the
	// operator's ceiling). The guardrail's minimum, 2000, still holds.
	MaxObservationChars int `json:"max_observation_chars,omitempty"`
	// Images says the client's model looks at image content blocks
	// natively: an image the typedcontent layer moves to the store is
	// also sent as a downscaled image block (see ImageView).
	Images bool `json:"images,omitempty"`
	// ImageView bounds the downscaled copy; zero fields take the
	// defaults of DefaultImageView.
	ImageView ImageView `json:"image_view,omitzero"`
}

// ImageView bounds the downscaled image a client that takes images gets in
// place of an image moved to the store.
type ImageView struct {
	// MaxSide is the longest side in pixels. Defaults to 1568, the size
	// past which vision models (Claude) scale an image down themselves.
	MaxSide int `json:"max_side,omitempty"`
	// MaxBytes is the most the encoded copy may take, decoded; a PNG over
	// it is encoded as JPEG at falling quality, then at a smaller size.
	// Defaults to 1 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxSourcePixels refuses to decode a larger original (checked from
	// its header before any pixel is decoded); such an image is
	// referenced only. Defaults to 50,000,000 (50 MP, 200 MB of RGBA).
	MaxSourcePixels int64 `json:"max_source_pixels,omitempty"`
	// MaxSourceBytes refuses to read a larger original. Defaults to
	// 64 MiB.
	MaxSourceBytes int64 `json:"max_source_bytes,omitempty"`
	// MaxWaitMS is how long, in milliseconds, a copy waits for the
	// process's work memory (serve.limits.max_work_bytes) to hold its
	// decode while other work holds it; past it, or past the call's
	// deadline, the image is referenced only, with a sentence saying
	// why. Defaults to DefaultImageMaxWaitMS (5 s).
	MaxWaitMS int64 `json:"max_wait_ms,omitempty"`
}

// Validate refuses negative bounds (zero takes the default).
func (v ImageView) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"max_side", int64(v.MaxSide)}, {"max_bytes", v.MaxBytes}, {"max_source_pixels", v.MaxSourcePixels}, {"max_source_bytes", v.MaxSourceBytes}, {"max_wait_ms", v.MaxWaitMS}} {
		if f.v < 0 {
			return fmt.Errorf("image_view.%s must not be negative", f.name)
		}
	}
	return nil
}

// The defaults of ImageView.
const (
	DefaultImageMaxSide         = 1568
	DefaultImageMaxBytes        = 1 << 20
	DefaultImageMaxSourcePixels = 50_000_000
	DefaultImageMaxSourceBytes  = 64 << 20
	// DefaultImageMaxWaitMS: a view is worth a short wait, not a stalled
	// call; decoding a 50 MP original takes about 2 s.
	DefaultImageMaxWaitMS = 5000
)
