// Package layers holds mcpx's built-in layers, one file each, registered
// with the engine's default registry from init. Import it for its side
// effect:
//
//	import _ "github.com/mcpx-dev/mcpx/layers"
//
// Every layer is switched and tuned per server and per tool through
// engine.Config; each file documents its options where they are declared.
package layers

import (
	"bytes"

	"github.com/mcpx-dev/mcpx/engine"
)

// stringVisit is a string found by walkStrings.
type stringVisit struct {
	Target engine.Target
	// Path of the string, or of its content block when Form is FormBlock.
	Path string
	// Form is FormBlock for the text of a content block that is not JSON,
	// FormText for other strings of the envelope, FormValue in payloads.
	Form engine.Form
	// Body is the string's raw body between the quotes (still escaped).
	Body []byte
}

// walkStrings visits every string whose raw body is at least minLen bytes:
// in each distinct payload carrier, then in the envelope of an MCP result,
// where image, audio and resource blocks are left to the typedcontent layer.
func walkStrings(d *engine.Doc, minLen int, fn func(s stringVisit)) error {
	carriers := d.Carriers()
	for i, c := range carriers {
		if duplicateCarrier(carriers, i) {
			continue
		}
		err := engine.Walk(c.Payload, func(v *engine.Visit) engine.Step {
			if v.Kind == engine.KindString && !v.Leave && v.End-v.Off-2 >= minLen {
				fn(stringVisit{Target: engine.TargetPayload, Path: v.PathString(), Form: engine.FormValue, Body: c.Payload[v.Off+1 : v.End-1]})
			}
			return engine.Descend
		})
		if err != nil {
			return err
		}
	}
	if !d.IsMCP() {
		return nil
	}
	blocks := d.Blocks()
	return d.WalkOutside(func(v *engine.Visit) engine.Step {
		if v.Leave {
			return engine.Descend
		}
		// content.N: leave typed blocks to typedcontent.
		if len(v.Path) == 2 && v.Path[0].KeyString() == "content" && v.Path[1].IsIndex() {
			if b := blockAt(blocks, v.Off); b != nil && b.Type != "text" {
				return engine.SkipValue
			}
		}
		if v.Kind != engine.KindString || v.End-v.Off-2 < minLen {
			return engine.Descend
		}
		s := stringVisit{Target: engine.TargetResult, Path: v.PathString(), Form: engine.FormText, Body: d.Raw[v.Off+1 : v.End-1]}
		if len(v.Path) == 3 && v.Path[0].KeyString() == "content" && v.Path[2].KeyString() == "text" {
			s.Path = engine.FormatPath(v.Path[:2])
			s.Form = engine.FormBlock
		}
		fn(s)
		return engine.Descend
	})
}

// duplicateCarrier reports whether an earlier carrier holds the same
// payload (FastMCP sends it both as structuredContent and as text): rewrites
// by path reach both, so one walk serves.
func duplicateCarrier(cs []engine.Carrier, i int) bool {
	for j := 0; j < i; j++ {
		if bytes.Equal(cs[j].Payload, cs[i].Payload) {
			return true
		}
	}
	return false
}

func blockAt(blocks []engine.Block, off int) *engine.Block {
	for i := range blocks {
		if blocks[i].Off == off {
			return &blocks[i]
		}
	}
	return nil
}

// str returns the unescaped string value of key in the object at raw[obj].
func str(raw []byte, obj int, key string) string {
	o, e, kind, ok := engine.Member(raw, obj, key)
	if !ok || kind != engine.KindString {
		return ""
	}
	s, err := engine.UnescapeString(raw[o+1 : e-1])
	if err != nil {
		return ""
	}
	return s
}
