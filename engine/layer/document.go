package layer

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/store"
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
	Scope store.Scope
	// OutputSchema is the tool's outputSchema from tools/list (may be nil).
	// When set, a rewritten value in structuredContent keeps the type the
	// schema gives it, and Options.SchemaValidator checks the result.
	OutputSchema json.RawMessage
	// View is what the call's client takes (its budget, native images);
	// the zero value is the configured behaviour.
	View View
	// Pages, when set, holds the result's bytes in memory whose pages a
	// JSON-in-text payload unescaped from them may share rather than copy
	// (mcpx transform reads a large input file so: internal/memfdbuf).
	// View reports false for bytes it does not hold. nil: payloads are
	// copies.
	Pages interface {
		View(b []byte, off, end, before, after int) ([]byte, bool)
	} `json:"-"`
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

	members jsonwalk.Object
}

// enterMember records a top-level member of a payload; a container's End
// is set by leaveMember.
func enterMember(m *jsonwalk.Object, key string, sp jsonwalk.Span) {
	*m = append(*m, jsonwalk.Field{Key: key, Span: sp})
}

// leaveMember sets the End of the last member, the container just closed.
func leaveMember(m jsonwalk.Object, end int) {
	if len(m) > 0 {
		m[len(m)-1].End = end
	}
}

// Member returns the span of a top-level member of the carrier's payload,
// from the index the Doc built in its one pass.
func (c *Carrier) Member(key string) (jsonwalk.Span, bool) { return c.members.Get(key) }

// Block is one content block of an MCP result.
type Block struct {
	// Index in the content array.
	Index int
	// Type is the block's "type" field.
	Type string
	// Off and End span the block object in Doc.Raw.
	Off, End int
}

// StringRef is a long string found when the Doc was indexed.
type StringRef struct {
	// Carrier is the index in Carriers() of the payload holding the string,
	// or -1 for the envelope of an MCP result (Off and End are then in Raw).
	Carrier int
	// Path locates the string in its carrier's payload, or in Raw.
	Path string
	// Off and End span the string literal, quotes included.
	Off, End int
	// Block is the content index of an envelope string under content.N,
	// else -1; Field is the key under the block ("text", "data", ...).
	Block int
	Field string
}

// Doc is a tool result being transformed: what a Layer looks at. It is
// read-only to layers; the engine makes a new Doc after each step. A Doc
// indexes itself lazily in one pass (validation, carriers, blocks, long
// strings, top-level members), so layers need not walk it again.
type Doc struct {
	Call Call
	// Raw is the result's JSON.
	Raw []byte

	once     sync.Once
	mcp      bool
	carriers []Carrier
	blocks   []Block
	strs     []StringRef
	err      error
	// maxDepth bounds the nesting the index accepts; 0 is DefaultMaxDepth.
	maxDepth int
}

// NewDoc returns a Doc over raw; it nests at most DefaultMaxDepth levels.
func NewDoc(c Call, raw []byte) *Doc { return &Doc{Call: c, Raw: raw} }

// NewDocMaxDepth returns a Doc over raw that nests at most maxDepth levels
// (0: DefaultMaxDepth); the engine makes its Docs so, under its
// Config.MaxDepth.
func NewDocMaxDepth(c Call, raw []byte, maxDepth int) *Doc {
	return &Doc{Call: c, Raw: raw, maxDepth: maxDepth}
}

func (d *Doc) depthLimit() int {
	if d.maxDepth > 0 {
		return d.maxDepth
	}
	return DefaultMaxDepth
}

// IsMCP reports whether the result is an MCP CallToolResult: an object with
// a content array of typed blocks, or with structuredContent.
func (d *Doc) IsMCP() bool { d.index(); return d.mcp }

// Carriers returns every carrier of the payload, in document order.
func (d *Doc) Carriers() []Carrier { d.index(); return d.carriers }

// Blocks returns the content blocks of an MCP result.
func (d *Doc) Blocks() []Block { d.index(); return d.blocks }

// Err reports a result that is not valid JSON.
func (d *Doc) Err() error { d.index(); return d.err }

// Strings returns the strings whose literal is at least min bytes long, in
// every carrier and in the envelope, in document order per buffer.
func (d *Doc) Strings(min int) []StringRef {
	d.index()
	if min >= IndexMinString {
		var out []StringRef
		for _, s := range d.strs {
			if s.End-s.Off >= min {
				out = append(out, s)
			}
		}
		return out
	}
	var out []StringRef
	collect := func(buf []byte, carrier int, env bool) {
		_ = jsonwalk.WalkValidated(buf, func(v *jsonwalk.Visit) jsonwalk.Step {
			if env && !v.Leave && d.InCarrier(v.Off) {
				return jsonwalk.SkipValue
			}
			if v.Kind == jsonwalk.KindString && v.End-v.Off >= min {
				out = append(out, d.stringRef(carrier, v, env))
			}
			return jsonwalk.Descend
		})
	}
	for i, c := range d.carriers {
		collect(c.Payload, i, false)
	}
	if d.mcp {
		collect(d.Raw, -1, true)
	}
	return out
}

func (d *Doc) stringRef(carrier int, v *jsonwalk.Visit, env bool) StringRef {
	s := StringRef{Carrier: carrier, Path: v.PathString(), Off: v.Off, End: v.End, Block: -1}
	if env && len(v.Path) >= 3 && v.Path[1].IsIndex() && v.Path[0].KeyIs("content") {
		s.Block, s.Field = v.Path[1].Index, v.Path[2].KeyString()
	}
	return s
}

// InCarrier reports whether offset off of Raw lies inside a carrier.
func (d *Doc) InCarrier(off int) bool {
	d.index()
	return d.inCarrier(off)
}

func (d *Doc) inCarrier(off int) bool {
	for _, c := range d.carriers {
		if off >= c.Off && off < c.End {
			return true
		}
	}
	return false
}

// index validates Raw and indexes it in one walk.
func (d *Doc) index() {
	d.once.Do(func() {
		ix := &rawIndex{d: d, structured: Carrier{Kind: CarrierStructured, Off: -1}, typedAll: true}
		ix.rootMem = ix.rootBuf[:0]
		d.err = jsonwalk.WalkFiltered(d.Raw, 3, IndexMinString, d.depthLimit(), ix.visit)
		if d.err != nil {
			d.blocks = nil
			return
		}
		for _, b := range d.blocks {
			if b.Type == "" {
				ix.typedAll = false
			}
		}
		d.mcp = ix.rootKind == jsonwalk.KindObject && ((ix.hasContent && ix.typedAll) || ix.structured.Off >= 0)
		if !d.mcp {
			d.blocks = nil
			d.carriers = []Carrier{{Kind: CarrierRaw, Payload: d.Raw, Off: ix.rootOff, End: len(d.Raw), members: ix.rootMem}}
			for i := range ix.strs {
				ix.strs[i].Block, ix.strs[i].Field = -1, ""
			}
			d.strs = ix.strs
			return
		}
		inner := d.textCarriers(ix.texts)
		si := d.insertStructured(ix.structured)
		d.assignStrings(ix.strs, ix.structured, si, inner)
	})
}

// rawIndex is the state of the one walk over Raw that finds the root's
// members, structuredContent, the content blocks and the long strings.
type rawIndex struct {
	d          *Doc
	structured Carrier
	rootKind   jsonwalk.Kind
	rootOff    int
	rootMem    jsonwalk.Object
	hasContent bool
	typedAll   bool
	texts      []textLit
	strs       []StringRef
	// rootBuf backs rootMem for the few members a result's root has, so
	// that a small result's index costs no allocation per member (the
	// gateway indexes one a call).
	rootBuf [4]jsonwalk.Field
}

// visit is the walk's callback.
func (ix *rawIndex) visit(v *jsonwalk.Visit) jsonwalk.Step {
	if v.Leave {
		ix.leave(v)
		return jsonwalk.Descend
	}
	switch len(v.Path) {
	case 0:
		ix.rootKind, ix.rootOff = v.Kind, v.Off
	case 1:
		ix.rootMember(v)
	case 2:
		ix.secondLevel(v)
	case 3:
		ix.blockField(v)
	}
	if v.Kind == jsonwalk.KindString && v.End-v.Off >= IndexMinString {
		ix.strs = append(ix.strs, ix.d.stringRef(0, v, true))
	}
	return jsonwalk.Descend
}

// leave closes the spans of containers: root members, members of
// structuredContent and content blocks.
func (ix *rawIndex) leave(v *jsonwalk.Visit) {
	n := len(v.Path)
	switch {
	case n == 0:
	case n == 1:
		if ix.rootKind == jsonwalk.KindObject {
			leaveMember(ix.rootMem, v.End)
		}
		if v.Off == ix.structured.Off {
			ix.structured.End = v.End
			ix.structured.Payload = ix.d.Raw[v.Off:v.End]
		}
	case n == 2 && v.Path[0].KeyIs("structuredContent"):
		if !v.Path[1].IsIndex() {
			leaveMember(ix.structured.members, v.End-ix.structured.Off)
		}
	case n == 2 && v.Kind == jsonwalk.KindObject && v.Path[0].KeyIs("content") && len(ix.d.blocks) > 0:
		ix.d.blocks[len(ix.d.blocks)-1].End = v.End
	}
}

// rootMember records a member of the root object.
func (ix *rawIndex) rootMember(v *jsonwalk.Visit) {
	if ix.rootKind != jsonwalk.KindObject {
		return
	}
	key := rootKey(v.Path[0])
	enterMember(&ix.rootMem, key, jsonwalk.Span{Off: v.Off, End: v.End, Kind: v.Kind})
	switch key {
	case "structuredContent":
		if v.Kind == jsonwalk.KindObject || v.Kind == jsonwalk.KindArray {
			ix.structured.Off = v.Off
		}
	case "content":
		ix.hasContent = v.Kind == jsonwalk.KindArray
	}
}

// rootKey returns the key of a root member: a CallToolResult's own
// members as constants rather than a string made of each result's bytes.
func rootKey(p jsonwalk.PathElem) string {
	switch {
	case p.KeyIs("content"):
		return "content"
	case p.KeyIs("structuredContent"):
		return "structuredContent"
	case p.KeyIs("isError"):
		return "isError"
	case p.KeyIs("_meta"):
		return "_meta"
	}
	return p.KeyString()
}

// blockType returns a content block's type from its literal's bytes: the
// types MCP defines as constants, any other unescaped.
func blockType(lit []byte) string {
	switch string(lit) { // compared in place, no string made
	case "text":
		return "text"
	case "image":
		return "image"
	case "audio":
		return "audio"
	case "resource":
		return "resource"
	case "resource_link":
		return "resource_link"
	}
	t, _ := jsonwalk.UnescapeString(lit)
	return t
}

// secondLevel records a member of structuredContent or a content block.
func (ix *rawIndex) secondLevel(v *jsonwalk.Visit) {
	if ix.rootKind != jsonwalk.KindObject {
		return
	}
	switch {
	case v.Path[0].KeyIs("structuredContent"):
		if v.Path[1].IsIndex() {
			return
		}
		key := v.Path[1].KeyString()
		end := v.End
		if end >= 0 {
			end -= ix.structured.Off
		}
		enterMember(&ix.structured.members, key, jsonwalk.Span{Off: v.Off - ix.structured.Off, End: end, Kind: v.Kind})
	case v.Path[0].KeyIs("content"):
		if v.Kind != jsonwalk.KindObject {
			ix.typedAll = false
			return
		}
		ix.d.blocks = append(ix.d.blocks, Block{Index: v.Path[1].Index, Off: v.Off})
	}
}

// blockField records a content block's type and text.
func (ix *rawIndex) blockField(v *jsonwalk.Visit) {
	d := ix.d
	if ix.rootKind != jsonwalk.KindObject || v.Kind != jsonwalk.KindString || !v.Path[0].KeyIs("content") || !v.Path[1].IsIndex() || len(d.blocks) == 0 {
		return
	}
	// KeyIs compares in place: every field of every block passes here,
	// and a key made a string only to be compared is an allocation a call.
	switch k := v.Path[2]; {
	case k.KeyIs("type"):
		d.blocks[len(d.blocks)-1].Type = blockType(d.Raw[v.Off+1 : v.End-1])
	case k.KeyIs("text"):
		ix.texts = append(ix.texts, textLit{v.Path[1].Index, jsonwalk.Span{Off: v.Off, End: v.End, Kind: jsonwalk.KindString}})
	}
}

// textCarriers adds the text blocks whose text is a JSON container as
// carriers and returns the long strings of each, in carrier order.
func (d *Doc) textCarriers(texts []textLit) [][]StringRef {
	var inner [][]StringRef
	for _, b := range d.blocks {
		t, ok := textOf(texts, b.Index)
		if !ok || b.Type != "text" || !looksLikeJSONContainer(d.Raw[t.Off+1:t.End-1]) {
			continue
		}
		// The walk of Raw validated the literal, so the runs the unescape
		// copied verbatim hold no quote, backslash or control character:
		// the payload's walk skips them rather than scan a long value
		// (a base64 file) a second time.
		payload, runs, err := unescapePayload(d.Call.Pages, d.Raw, t.Off+1, t.End-1)
		if err != nil {
			continue
		}
		c := Carrier{Kind: CarrierText, Block: b.Index, Payload: payload, Off: t.Off, End: t.End}
		var found []StringRef
		err = jsonwalk.WalkFilteredClean(payload, runs, 1, IndexMinString, d.depthLimit(), func(v *jsonwalk.Visit) jsonwalk.Step {
			if len(v.Path) == 1 && !v.Path[0].IsIndex() {
				if v.Leave {
					leaveMember(c.members, v.End)
				} else {
					enterMember(&c.members, v.Path[0].KeyString(), jsonwalk.Span{Off: v.Off, End: v.End, Kind: v.Kind})
				}
			}
			if !v.Leave && v.Kind == jsonwalk.KindString && v.End-v.Off >= IndexMinString {
				found = append(found, d.stringRef(0, v, false))
			}
			return jsonwalk.Descend
		})
		if err != nil {
			continue
		}
		d.carriers = append(d.carriers, c)
		inner = append(inner, found)
	}
	return inner
}

// unescapePayload returns the unescaped text of the literal body
// raw[off:end] and the runs of it copied verbatim (jsonstr.UnescapeRuns).
// When the body's longest verbatim run is long and pages hold raw (mcpx
// transform's input file), the run is not copied: the payload is a view
// that shares its pages with raw, the unescaped text before and after it
// written around it.
func unescapePayload(pages interface {
	View([]byte, int, int, int, int) ([]byte, bool)
}, raw []byte, off, end int) ([]byte, []jsonstr.Run, error) {
	body := raw[off:end]
	if pages == nil || len(body) < sharedRunMin {
		return jsonstr.UnescapeRuns(nil, body, verbatimRunMin)
	}
	p, q := jsonstr.LongestVerbatim(body)
	if q-p < sharedRunMin {
		return jsonstr.UnescapeRuns(nil, body, verbatimRunMin)
	}
	head, headRuns, err := jsonstr.UnescapeRuns(nil, body[:p], verbatimRunMin)
	if err != nil {
		return nil, nil, err
	}
	tail, tailRuns, err := jsonstr.UnescapeRuns(nil, body[q:], verbatimRunMin)
	if err != nil {
		return nil, nil, err
	}
	payload, ok := pages.View(raw, off+p, off+q, len(head), len(tail))
	if !ok {
		return jsonstr.UnescapeRuns(nil, body, verbatimRunMin)
	}
	copy(payload, head)
	at := len(head) + q - p
	copy(payload[at:], tail)
	runs := append(headRuns, jsonstr.Run{Off: len(head), End: at})
	for _, r := range tailRuns {
		runs = append(runs, jsonstr.Run{Off: at + r.Off, End: at + r.End})
	}
	return payload, runs, nil
}

// sharedRunMin is the shortest verbatim run unescapePayload shares with
// the input rather than copy: a view costs a mapping (tens of
// microseconds), a copy of 256 KiB about as much.
const sharedRunMin = 256 << 10

// verbatimRunMin is the shortest verbatim run of a JSON-in-text payload
// whose scan its walk skips: shorter runs cost little to scan, and the
// list of runs stays under 2% of the payload's size.
const verbatimRunMin = 1 << 10

// insertStructured puts the structuredContent carrier among the text
// carriers in document order and returns its index, -1 when there is none.
func (d *Doc) insertStructured(structured Carrier) int {
	if structured.Off < 0 {
		return -1
	}
	si := 0
	for si < len(d.carriers) && d.carriers[si].Off < structured.Off {
		si++
	}
	d.carriers = append(d.carriers, Carrier{})
	copy(d.carriers[si+1:], d.carriers[si:])
	d.carriers[si] = structured
	return si
}

// assignStrings gives each long string its carrier: those of Raw inside
// structuredContent move to its carrier, the literals of text carriers give
// way to their insides, the rest are the envelope's.
func (d *Doc) assignStrings(strs []StringRef, structured Carrier, si int, inner [][]StringRef) {
	for _, s := range strs {
		switch {
		case si >= 0 && s.Off > structured.Off && s.Off < structured.End:
			s.Carrier, s.Off, s.End, s.Block, s.Field = si, s.Off-structured.Off, s.End-structured.Off, -1, ""
			s.Path = strings.TrimPrefix(s.Path, "structuredContent.")
		case d.inCarrier(s.Off):
			continue
		default:
			s.Carrier = -1
		}
		d.strs = append(d.strs, s)
	}
	ti := 0
	for ci, c := range d.carriers {
		if c.Kind != CarrierText {
			continue
		}
		for _, s := range inner[ti] {
			s.Carrier = ci
			d.strs = append(d.strs, s)
		}
		ti++
	}
}

// textLit is the text literal of a content block.
type textLit struct {
	block int
	jsonwalk.Span
}

func textOf(ts []textLit, block int) (jsonwalk.Span, bool) {
	for _, t := range ts {
		if t.block == block {
			return t.Span, true
		}
	}
	return jsonwalk.Span{}, false
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
