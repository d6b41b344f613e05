package engine

import (
	"encoding/json"
	"sync"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
)

// Call identifies the tool call whose result is transformed.
type Call struct {
	// Server is the upstream server's name; it selects per-server config
	// and namespaces artifact ids.
	Server string
	// Tool is the tool's name as the upstream knows it.
	Tool string
	// Arguments are the call's arguments as JSON (may be nil).
	Arguments json.RawMessage
	// Scope is recorded on every artifact of the call.
	Scope Scope
}

// CarrierKind says where a payload sits in a result.
type CarrierKind string

// The carriers of a payload.
const (
	// CarrierStructured is a CallToolResult's structuredContent.
	CarrierStructured CarrierKind = "structuredContent"
	// CarrierText is a text block whose text is a JSON object or array.
	CarrierText CarrierKind = "text"
	// CarrierRaw is a result that is not an MCP CallToolResult: the whole
	// document is the payload.
	CarrierRaw CarrierKind = "raw"
)

// Carrier is one place that holds the tool's payload.
type Carrier struct {
	Kind CarrierKind
	// Block is the content index of a CarrierText.
	Block int
	// Payload is the payload's JSON. For a text block it is the unescaped
	// text; otherwise it aliases Doc.Raw. Read-only.
	Payload []byte
	// Off and End span the carrier's value in Doc.Raw (for a text block,
	// the string literal with its quotes).
	Off, End int
}

// Doc is a tool result being transformed: what a Layer looks at. It is
// read-only to layers; the engine makes a new Doc after each step.
type Doc struct {
	Call Call
	// Raw is the result's JSON.
	Raw []byte

	once     sync.Once
	mcp      bool
	carriers []Carrier
	blocks   []Block
	err      error
}

// Block is one content block of an MCP result.
type Block struct {
	// Index in the content array.
	Index int
	// Type is the block's "type" field.
	Type string
	// Off and End span the block object in Doc.Raw.
	Off, End int
}

// NewDoc returns a Doc over raw.
func NewDoc(c Call, raw []byte) *Doc { return &Doc{Call: c, Raw: raw} }

// IsMCP reports whether the result is an MCP CallToolResult: an object with
// a content array of typed blocks, or with structuredContent.
func (d *Doc) IsMCP() bool { d.parse(); return d.mcp }

// Carriers returns every carrier of the payload, in document order.
func (d *Doc) Carriers() []Carrier { d.parse(); return d.carriers }

// Blocks returns the content blocks of an MCP result.
func (d *Doc) Blocks() []Block { d.parse(); return d.blocks }

// Err reports a result that could not be read.
func (d *Doc) Err() error { d.parse(); return d.err }

// InCarrier reports whether offset off of Raw lies inside a carrier.
func (d *Doc) InCarrier(off int) bool {
	for _, c := range d.Carriers() {
		if off >= c.Off && off < c.End {
			return true
		}
	}
	return false
}

// WalkOutside walks Raw, skipping the carriers' values: what is left is the
// envelope of an MCP result (content blocks that are not JSON text, _meta).
// For a non-MCP result it visits nothing, since the whole document is the
// payload.
func (d *Doc) WalkOutside(fn WalkFunc) error {
	if !d.IsMCP() {
		return nil
	}
	return Walk(d.Raw, func(v *Visit) Step {
		if !v.Leave && d.InCarrier(v.Off) {
			return SkipValue
		}
		return fn(v)
	})
}

// parse finds the carriers and blocks in one pass over the top two levels.
func (d *Doc) parse() {
	d.once.Do(func() {
		type textBlock struct {
			off, end int
			typ      string
		}
		var (
			structured = Carrier{Off: -1}
			texts      []textBlock
			isObject   bool
			hasContent bool
			typedAll   = true
		)
		d.err = Walk(d.Raw, func(v *Visit) Step {
			if v.Leave {
				if len(v.Path) == 1 && v.Off == structured.Off {
					structured.End = v.End
					structured.Payload = d.Raw[v.Off:v.End]
				}
				if len(v.Path) == 2 && v.Kind == KindObject && v.Path[0].KeyString() == "content" {
					d.blocks[len(d.blocks)-1].End = v.End
				}
				return Descend
			}
			switch len(v.Path) {
			case 0:
				if v.Kind != KindObject {
					return Stop
				}
				isObject = true
				return Descend
			case 1:
				switch v.Path[0].KeyString() {
				case "structuredContent":
					if v.Kind == KindObject || v.Kind == KindArray {
						structured = Carrier{Kind: CarrierStructured, Off: v.Off}
						return Descend // End is set on leave below
					}
				case "content":
					if v.Kind == KindArray {
						hasContent = true
						return Descend
					}
				}
				return SkipValue
			case 2:
				if v.Path[0].KeyString() == "structuredContent" {
					return SkipValue
				}
				if v.Kind != KindObject {
					typedAll = false
					return SkipValue
				}
				d.blocks = append(d.blocks, Block{Index: v.Path[1].Index, Off: v.Off})
				return Descend
			case 3:
				if v.Path[0].KeyString() != "content" {
					return SkipValue
				}
				b := &d.blocks[len(d.blocks)-1]
				switch v.Path[2].KeyString() {
				case "type":
					if v.Kind == KindString {
						b.Type, _ = unescapeString(d.Raw[v.Off+1 : v.End-1])
					}
				case "text":
					if v.Kind == KindString {
						texts = append(texts, textBlock{off: v.Off, end: v.End})
					}
				}
				return SkipValue
			}
			return SkipValue
		})
		if d.err != nil || !isObject {
			d.blocks = nil
			d.carriers = []Carrier{{Kind: CarrierRaw, Payload: d.Raw, Off: 0, End: len(d.Raw)}}
			return
		}
		for _, b := range d.blocks {
			if b.Type == "" {
				typedAll = false
			}
		}
		d.mcp = (hasContent && typedAll) || structured.Off >= 0
		if !d.mcp {
			d.blocks = nil
			d.carriers = []Carrier{{Kind: CarrierRaw, Payload: d.Raw, Off: 0, End: len(d.Raw)}}
			return
		}
		// Text blocks become carriers when their text is a JSON container.
		ti := 0
		for bi, b := range d.blocks {
			for ti < len(texts) && texts[ti].off < b.Off {
				ti++
			}
			if ti >= len(texts) || texts[ti].off > b.End || b.Type != "text" {
				continue
			}
			t := texts[ti]
			body := d.Raw[t.off+1 : t.end-1]
			if !looksLikeJSONContainer(body) {
				continue
			}
			payload, err := jsonstr.Unescape(nil, body)
			if err != nil || Walk(payload, func(*Visit) Step { return Descend }) != nil {
				continue
			}
			d.carriers = append(d.carriers, Carrier{Kind: CarrierText, Block: d.blocks[bi].Index, Payload: payload, Off: t.off, End: t.end})
		}
		if structured.Off >= 0 {
			// Keep document order.
			i := 0
			for i < len(d.carriers) && d.carriers[i].Off < structured.Off {
				i++
			}
			d.carriers = append(d.carriers, Carrier{})
			copy(d.carriers[i+1:], d.carriers[i:])
			d.carriers[i] = structured
		}
	})
}

// looksLikeJSONContainer checks the escaped text for a leading { or [.
func looksLikeJSONContainer(body []byte) bool {
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case ' ', '\t':
			continue
		case '\\':
			if i+1 < len(body) && (body[i+1] == 'n' || body[i+1] == 'r' || body[i+1] == 't') {
				i++
				continue
			}
			return false
		case '{', '[':
			return true
		default:
			return false
		}
	}
	return false
}
