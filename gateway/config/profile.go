package config

import "github.com/mcpx-dev/mcpx/imageview"

// Profile is what a client takes. In config ("profiles" in serve), keyed
// by a client name matched case-insensitively as a prefix of clientInfo.name
// (the longest match wins; a config entry replaces a built-in one of the
// same name, "default" applies to every client no other entry matches).
type Profile struct {
	// MaxChars is the most characters of a result the client's host
	// keeps; the guardrail cuts to the smaller of it and its own budget.
	// Defaults to 0: no client limit (the guardrail's budget).
	MaxChars int `json:"max_chars,omitempty"`
	// MaxTokens is the host's cap in tokens; it counts as MaxTokens ×
	// 3.5 characters (engine.EstimateTokens' text ratio)
	// when tighter than MaxChars. Defaults to 0: none.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Images says the client's model looks at image content blocks: an
	// image moved to the store is also sent as a downscaled image block
	// (imageview.Limits's bounds). Defaults to false.
	Images bool `json:"images,omitempty"`
	// ImageView bounds the downscaled copy; zero fields take
	// imageview.Limits's defaults (1568 px, 1 MiB, 50 MP originals).
	ImageView imageview.Limits `json:"image_view,omitzero"`
}
