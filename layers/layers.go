// Package layers holds mcpx's built-in layers, one file each, registered
// with the engine's default registry from init together with the WASM
// layers (custom and presets, from layers/wasm, with the presets of package
// plugins), and their order (DefaultChain), set there as the registry's
// default chain. Import it for its side effect:
//
//	import _ "github.com/mcpx-dev/mcpx/layers"
//
// The default registry's WASM layers make their own Host on first need
// (wasm.LayersOnDemand) and close it with the last of them. An embedder
// that runs several engines, or wants its own cache folder, logger or
// limits, makes a Host and binds the WASM layers to it:
//
//	reg := layer.DefaultRegistry().With(wasm.Layers(host)...)
//	eng, err := engine.New(engine.Options{Store: st, Registry: reg})
//
// Every layer is switched and tuned per server and per tool through
// engine.Config; each file documents its options where they are declared.
package layers

import (
	"bytes"
	"context"
	"strconv"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

// DefaultChain returns the order of the layers (docs/design.md, "The
// chain"), which init sets as the default registry's order. init registers
// every layer it names.
func DefaultChain() []string {
	return []string{
		"fastmcp", "contract", "custom", "presets", "fields", "resourcelink",
		"typedcontent", "magicbytes", "sizenet", "guardrail",
	}
}

func init() {
	for _, info := range wasm.LayersOnDemand(wasm.HostOptions{Presets: plugins.Catalog()}) {
		layer.Register(info)
	}
	layer.DefaultRegistry().SetChain(DefaultChain())
}

// stringVisit is a string found by walkStrings.
type stringVisit struct {
	Target layer.Target
	// Path of the string, or of its content block when Form is FormBlock.
	Path string
	// Form is FormBlock for the text of a content block that is not JSON,
	// FormText for other strings of the envelope, FormValue in payloads.
	Form layer.Form
	// Body is the string's raw body between the quotes (still escaped).
	Body []byte
}

// walkStrings visits every string whose literal is at least minLen bytes:
// in each distinct payload carrier, then in the envelope of an MCP result,
// where image, audio and resource blocks are left to the typedcontent layer.
// It reads the index the Doc built in its one pass, and stops with ctx's
// error once ctx is done.
func walkStrings(ctx context.Context, d *layer.Doc, minLen int, fn func(s stringVisit)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	carriers := d.Carriers()
	blocks := d.Blocks()
	for i, s := range d.Strings(minLen + 2) {
		if i&255 == 255 && ctx.Err() != nil {
			return ctx.Err()
		}
		if s.Carrier >= 0 {
			if duplicateCarrier(carriers, s.Carrier) {
				continue
			}
			p := carriers[s.Carrier].Payload
			fn(stringVisit{Target: layer.TargetPayload, Path: s.Path, Form: layer.FormValue, Body: p[s.Off+1 : s.End-1]})
			continue
		}
		v := stringVisit{Target: layer.TargetResult, Path: s.Path, Form: layer.FormText, Body: d.Raw[s.Off+1 : s.End-1]}
		if s.Block >= 0 {
			b := blockByIndex(blocks, s.Block)
			if b == nil || b.Type != "text" {
				continue // typedcontent's
			}
			if block := "content." + strconv.Itoa(s.Block); s.Path == block+".text" {
				v.Path, v.Form = block, layer.FormBlock
			}
		}
		fn(v)
	}
	return nil
}

// duplicateCarrier reports whether an earlier carrier holds the same
// payload (FastMCP sends it both as structuredContent and as text): rewrites
// by path reach both, so one walk serves.
func duplicateCarrier(cs []layer.Carrier, i int) bool {
	for j := 0; j < i; j++ {
		if bytes.Equal(cs[j].Payload, cs[i].Payload) {
			return true
		}
	}
	return false
}

func blockByIndex(blocks []layer.Block, index int) *layer.Block {
	for i := range blocks {
		if blocks[i].Index == index {
			return &blocks[i]
		}
	}
	return nil
}

// str returns the unescaped string value of key in the object at raw[obj].
func str(raw []byte, obj int, key string) string {
	sp, ok := jsonwalk.Member(raw, obj, key)
	if !ok || sp.Kind != jsonwalk.KindString {
		return ""
	}
	s, err := jsonwalk.UnescapeString(raw[sp.Off+1 : sp.End-1])
	if err != nil {
		return ""
	}
	return s
}
