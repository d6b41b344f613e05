// Package embedded is a config tree that embeds a struct, which the
// reference refuses (TestEmbeddedStructRefused).
package embedded

// Base is embedded by Root.
type Base struct {
	// A is lifted into Root's object. Defaults to 0.
	A int `json:"a"`
}

// Root embeds Base.
type Root struct {
	Base
	// B is Root's own. Defaults to 0.
	B int `json:"b"`
}
