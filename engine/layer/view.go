package layer

// What the client on the other end of a call can take: a host (the
// gateway) knows its client and passes a View with each call; the engine
// and the layers fit the result to it.

import "github.com/mcpx-dev/mcpx/imageview"

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
	// ImageView bounds the downscaled copy (package imageview documents
	// each bound and its default); zero fields take the defaults.
	ImageView imageview.Limits `json:"image_view,omitzero"`
}
