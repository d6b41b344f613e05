// Package jsonwalk reads JSON in place, in one pass and without
// recursion: Walk visits every value with its path and byte span, Members
// and Member read an object's fields, ParsePath and Path match rewrite
// paths, and Splice applies edits by offset.
package jsonwalk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/segmentio/asm/ascii"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
)

// Kind is the JSON type of a visited value.
type Kind uint8

// The kinds a Walk reports.
const (
	KindString Kind = iota + 1
	KindNumber
	KindLiteral // true, false, null
	KindObject
	KindArray
)

// Step is what a WalkFunc tells Walk to do next.
type Step uint8

const (
	// Descend goes on, into the value when it is a container.
	Descend Step = iota
	// SkipValue goes on after the value without visiting its children.
	SkipValue
	// Stop ends the walk.
	Stop
)

// PathElem is one component of a value's location: an object key or an
// array index.
type PathElem struct {
	// Key is the raw (still escaped) key between its quotes; nil for an index.
	Key []byte
	// Index is the array index when Key is nil.
	Index int

	keyOff int
}

// IsIndex reports whether the element is an array index.
func (p PathElem) IsIndex() bool { return p.Key == nil }

// KeyIs reports whether the unescaped key equals s, without allocating
// for keys that have no escapes.
func (p PathElem) KeyIs(s string) bool {
	if p.Key == nil {
		return false
	}
	if bytes.IndexByte(p.Key, '\\') < 0 {
		return string(p.Key) == s
	}
	return p.KeyString() == s
}

// KeyString returns the unescaped key.
func (p PathElem) KeyString() string {
	if bytes.IndexByte(p.Key, '\\') < 0 {
		return string(p.Key)
	}
	s, err := UnescapeString(p.Key)
	if err != nil {
		return string(p.Key)
	}
	return s
}

// Visit describes one value during a Walk. It is valid only inside the
// callback: Walk reuses it.
type Visit struct {
	// Path locates the value from the walked root.
	Path []PathElem
	// Kind is the value's JSON type.
	Kind Kind
	// Off is the offset of the value's first byte in the walked document.
	Off int
	// End is the offset just past the value for scalars; for containers it is
	// -1 on entry and known on the leave call.
	End int
	// Leave is true on the second call made for a container, after its
	// children.
	Leave bool
	// Parent is the offset of the enclosing object or array; -1 at the root.
	Parent int
	// KeyOff is the offset of an object member's key (its opening quote);
	// -1 for array elements and the root.
	KeyOff int
}

// PathString renders the path in gjson syntax, escaping keys.
func (v *Visit) PathString() string { return FormatPath(v.Path) }

// WalkFunc is called for each value: on entry, and for containers once more
// on leave (the return value is then ignored).
type WalkFunc func(v *Visit) Step

// ErrBadJSON is wrapped by Walk for input that is not JSON.
var ErrBadJSON = errors.New("invalid JSON")

// ErrTooDeep is wrapped by a Doc's Err when the document nests deeper than
// depthLimit WalkFiltered was given (the engine's MaxDepth).
var ErrTooDeep = errors.New("JSON nested too deep")

type frame struct {
	kind  Kind
	off   int
	index int
}

// Walk visits every value of the JSON document raw in document order, in a
// single pass and without recursion, so 10,000 nesting levels cost no stack.
func Walk(raw []byte, fn WalkFunc) error {
	return walk(walker{raw: raw, fn: fn})
}

type walker struct {
	raw     []byte
	fn      WalkFunc
	stack   []frame
	path    []PathElem
	visit   Visit
	i       int
	stopped bool
	// When maxDepth > 0, values deeper than it reach fn only if they are
	// strings of at least minString bytes: indexing a document needs its
	// top levels and its long strings, and a call per value costs more
	// than the scan.
	maxDepth  int
	minString int
	// trusted skips the check of string bodies, for documents this
	// package has already validated: a 10 MB string costs a scan per check.
	trusted bool
	// depthLimit, when positive, fails the walk with ErrTooDeep at the
	// first container nested deeper than it.
	depthLimit int
	// clean are spans of raw known to hold no quote, backslash or control
	// character (in order), which the check of a string body skips; next
	// is the first of them not yet behind the walk.
	clean []jsonstr.Run
	next  int
	// the first levels of stack and path: most documents nest a few
	stackBuf [8]frame
	pathBuf  [8]PathElem
}

// WalkValidated is Walk for JSON that a Walk has already validated, such as
// every buffer of an engine Doc (Raw and each carrier's Payload): it skips
// the check of string bodies, which costs a scan of every string. On invalid
// JSON it may report values a validating Walk would refuse.
func WalkValidated(raw []byte, fn WalkFunc) error {
	return walk(walker{raw: raw, fn: fn, trusted: true})
}

// WalkFiltered is Walk that calls fn only for values at depth <= maxDepth
// and for strings of at least minString bytes (quotes included).
// A positive depthLimit fails the walk with ErrTooDeep past that nesting.
func WalkFiltered(raw []byte, maxDepth, minString, depthLimit int, fn WalkFunc) error {
	return walk(walker{raw: raw, fn: fn, maxDepth: maxDepth, minString: minString, depthLimit: depthLimit})
}

// WalkFilteredClean is WalkFiltered over raw whose spans clean (in order,
// not overlapping) hold no quote, backslash or control character, as the
// verbatim runs jsonstr.UnescapeRuns reports of a validated string: the
// check of a string body skips them instead of scanning them (a 10 MB
// base64 value in a JSON-in-text payload costs no second scan). A span
// that breaks that promise makes the walk misread raw.
func WalkFilteredClean(raw []byte, clean []jsonstr.Run, maxDepth, minString, depthLimit int, fn WalkFunc) error {
	return walk(walker{raw: raw, fn: fn, maxDepth: maxDepth, minString: minString, depthLimit: depthLimit, clean: clean})
}

// walkers keeps walkers between walks: a walker escapes to the heap
// (fn gets pointers into it), and the engine walks every tool result
// at least once, so each walk would cost an allocation of its state and
// of its first levels of stack and path.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// walk runs a walker set up as cfg, from the pool.
func walk(cfg walker) error {
	w := walkers.Get().(*walker)
	stack, path := w.stackBuf, w.pathBuf
	*w = cfg
	w.stackBuf, w.pathBuf = stack, path
	err := w.run()
	clear(w.pathBuf[:]) // no key of this document kept alive
	w.raw, w.fn, w.clean, w.visit = nil, nil, nil, Visit{}
	w.stack, w.path = nil, nil
	walkers.Put(w)
	return err
}

func (w *walker) errf(format string, a ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrBadJSON, w.i, fmt.Sprintf(format, a...))
}

func (w *walker) ws() {
	for w.i < len(w.raw) {
		switch w.raw[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// call invokes fn for the value at w.i with the current path.
func (w *walker) call(kind Kind, off, end int, leave bool) Step {
	if w.maxDepth > 0 && len(w.path) > w.maxDepth && (kind != KindString || end-off < w.minString) {
		return Descend
	}
	parent := -1
	if len(w.stack) > 0 {
		parent = w.stack[len(w.stack)-1].off
	}
	w.visit = Visit{Path: w.path, Kind: kind, Off: off, End: end, Leave: leave, Parent: parent, KeyOff: -1}
	if n := len(w.path); n > 0 && !w.path[n-1].IsIndex() {
		w.visit.KeyOff = w.path[n-1].keyOff
	}
	return w.fn(&w.visit)
}

func (w *walker) run() error {
	w.stack, w.path = w.stackBuf[:0], w.pathBuf[:0]
	w.ws()
	if err := w.value(); err != nil {
		return err
	}
	for len(w.stack) > 0 && !w.stopped {
		top := &w.stack[len(w.stack)-1]
		w.ws()
		if w.i >= len(w.raw) {
			return w.errf("unexpected end")
		}
		c := w.raw[w.i]
		closer := byte('}')
		if top.kind == KindArray {
			closer = ']'
		}
		if c == closer {
			w.i++
			w.stack = w.stack[:len(w.stack)-1]
			w.call(top.kind, top.off, w.i, true)
			if len(w.path) > 0 {
				w.path = w.path[:len(w.path)-1]
			}
			continue
		}
		if top.index > 0 {
			if c != ',' {
				return w.errf("expected ',' or '%c'", closer)
			}
			w.i++
			w.ws()
		}
		idx := top.index
		top.index++
		if top.kind == KindObject {
			if w.i >= len(w.raw) || w.raw[w.i] != '"' {
				return w.errf("expected object key")
			}
			end, err := w.stringEnd(w.i)
			if err != nil {
				return err
			}
			key, keyOff := w.raw[w.i+1:end-1], w.i
			w.i = end
			w.ws()
			if w.i >= len(w.raw) || w.raw[w.i] != ':' {
				return w.errf("expected ':'")
			}
			w.i++
			w.ws()
			w.path = append(w.path, PathElem{Key: key, keyOff: keyOff})
		} else {
			w.path = append(w.path, PathElem{Index: idx})
		}
		if err := w.value(); err != nil {
			return err
		}
	}
	if w.stopped {
		return nil
	}
	w.ws()
	if w.i != len(w.raw) {
		return w.errf("trailing data")
	}
	return nil
}

// value reads the value at w.i. Scalars are reported and popped from the
// path; containers are pushed.
func (w *walker) value() error {
	if w.i >= len(w.raw) {
		return w.errf("unexpected end")
	}
	off := w.i
	var kind Kind
	switch c := w.raw[w.i]; {
	case c == '{' || c == '[':
		kind = KindObject
		if c == '[' {
			kind = KindArray
		}
		switch w.call(kind, off, -1, false) {
		case Stop:
			w.stopped = true
			return nil
		case SkipValue:
			end, err := SkipContainer(w.raw, off)
			if err != nil {
				w.i = off
				return err
			}
			w.i = end
			w.call(kind, off, end, true)
			w.popPath()
			return nil
		}
		w.i++
		if w.depthLimit > 0 && len(w.stack) >= w.depthLimit {
			w.i = off
			return fmt.Errorf("%w: more than %d levels at offset %d", ErrTooDeep, w.depthLimit, off)
		}
		w.stack = append(w.stack, frame{kind: kind, off: off})
		return nil
	case c == '"':
		end, err := w.stringEnd(off)
		if err != nil {
			return err
		}
		w.i = end
		kind = KindString
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(w.raw[off:], []byte(lit)) {
				w.i = off + len(lit)
				kind = KindLiteral
				break
			}
		}
		if kind == 0 {
			return w.errf("invalid literal")
		}
	case c == '-' || (c >= '0' && c <= '9'):
		end, ok := numberEnd(w.raw, off)
		if !ok {
			w.i = end
			return w.errf("invalid number")
		}
		w.i = end
		kind = KindNumber
	default:
		return w.errf("unexpected character %q", c)
	}
	if w.call(kind, off, w.i, false) == Stop {
		w.stopped = true
	}
	w.popPath()
	return nil
}

func (w *walker) popPath() {
	if len(w.stack) > 0 && len(w.path) > 0 {
		w.path = w.path[:len(w.path)-1]
	}
}

// stringEnd returns the offset just past the string starting at off and
// checks the string's body: no raw control characters, valid escapes.
func (w *walker) stringEnd(off int) (int, error) {
	// Short strings without escapes: one pass, no calls.
	for i := off + 1; i < len(w.raw) && i < off+48; i++ {
		c := w.raw[i]
		if c == '"' {
			return i + 1, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	if w.trusted {
		end, ok := StringEnd(w.raw, off)
		if !ok {
			w.i = off
			return 0, w.errf("unterminated string")
		}
		return end, nil
	}
	end, bad := scanStringSkipping(w.raw, off, w.clean, &w.next)
	if end == 0 {
		w.i = off
		return 0, w.errf("unterminated string")
	}
	if bad >= 0 {
		w.i = bad
		return 0, w.errf("invalid character %q in string", w.raw[w.i])
	}
	return end, nil
}

// scanString is StringEnd and invalidStringByte in one pass, for strings
// of many megabytes (a base64 PDF): it returns the offset just past the
// string whose opening quote is at raw[off] (0 when it is unterminated)
// and the offset of the first byte that makes its body invalid (a control
// character or a bad escape), -1 when none. scanSpecial finds the bytes
// that matter, a quote, a backslash or a control character, all at once.
func scanString(raw []byte, off int) (end, bad int) {
	return scanStringSkipping(raw, off, nil, nil)
}

// scanStringSkipping is scanString that jumps over the spans of clean (in
// order, none of them holding a quote, a backslash or a control
// character) instead of scanning them; *next is the index of the first
// span not behind off, and moves on as the scan does.
func scanStringSkipping(raw []byte, off int, clean []jsonstr.Run, next *int) (end, bad int) {
	i := off + 1
	for {
		i = nextSpecial(raw, i, clean, next)
		switch {
		case i >= len(raw):
			return 0, -1
		case raw[i] == '"':
			return i + 1, -1
		case raw[i] == '\\':
			if n := jsonstr.EscapeLen(raw[i:]); n > 0 {
				i += n
				continue
			}
		}
		// Invalid: an unterminated string is reported as such first.
		end, ok := StringEnd(raw, off)
		if !ok {
			return 0, -1
		}
		return end, i
	}
}

// nextSpecial returns the offset of the first quote, backslash or control
// character at or after i (len(raw) when there is none), skipping the
// spans of clean.
func nextSpecial(raw []byte, i int, clean []jsonstr.Run, next *int) int {
	for {
		limit := len(raw)
		if next != nil {
			for *next < len(clean) && clean[*next].End <= i {
				*next++
			}
			if *next < len(clean) {
				if r := clean[*next]; r.Off <= i {
					i = r.End
					continue
				}
				limit = clean[*next].Off
			}
		}
		i = scanSpecial(raw, i, limit)
		if i < limit || limit == len(raw) {
			return i
		}
	}
}

// scanSpecial returns the offset of the first quote, backslash or control
// character in raw[i:limit], or limit. Eight bytes at a time it looks for
// all three at once; past a first stretch without any (most strings end
// or hit an escape sooner) it takes printable ASCII, a base64 value's
// alphabet, a block at a time with SIMD (segmentio/asm), four times as
// fast.
func scanSpecial(raw []byte, i, limit int) int {
	raw = raw[:limit]
	stretch := min(i+asciiScanAfter, limit)
	if i = scanSpecialWords(raw, i, stretch); i < stretch || i == limit {
		return i
	}
	for i+asciiBlock <= limit {
		b := raw[i : i+asciiBlock]
		if !ascii.ValidPrint(b) || bytes.IndexByte(b, '"') >= 0 || bytes.IndexByte(b, '\\') >= 0 {
			break
		}
		i += asciiBlock
	}
	return scanSpecialWords(raw, i, limit)
}

// asciiScanAfter is how far scanSpecial looks eight bytes at a time
// before it tries blocks of printable ASCII; asciiBlock is a block's size.
const (
	asciiScanAfter = 256
	asciiBlock     = 4 << 10
)

// scanSpecialWords is scanSpecial eight bytes at a time.
func scanSpecialWords(raw []byte, i, limit int) int {
	raw = raw[:limit]
	for ; i+32 <= len(raw); i += 32 {
		c := raw[i : i+32 : i+32]
		if special(binary.LittleEndian.Uint64(c))|special(binary.LittleEndian.Uint64(c[8:]))|
			special(binary.LittleEndian.Uint64(c[16:]))|special(binary.LittleEndian.Uint64(c[24:])) != 0 {
			break
		}
	}
	for i < len(raw) && raw[i] != '"' && raw[i] != '\\' && raw[i] >= 0x20 {
		i++
	}
	return i
}

// special has the high bit set in a byte of w that is a quote, a
// backslash or a control character (and maybe in bytes above it, which
// scanString's byte loop sorts out).
func special(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := w^(ones*'"'), w^(ones*'\\')
	return ((q-ones)&^q | (b-ones)&^b | (w-ones*0x20)&^w) & highs
}

// numberEnd scans a number by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(raw []byte, i int) (int, bool) {
	digits := func() bool {
		s := i
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(raw) && raw[i] == '-' {
		i++
	}
	if i < len(raw) && raw[i] == '0' {
		i++
	} else if !digits() {
		return i, false
	}
	if i < len(raw) && raw[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

// StringEnd returns the offset just past the JSON string whose opening quote
// is at raw[off]. Runs without quotes are skipped with bytes.IndexByte.
func StringEnd(raw []byte, off int) (int, bool) {
	i := off + 1
	for {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return 0, false
		}
		i += j
		// Count the backslashes before the quote: an odd count escapes it.
		n := 0
		for k := i - 1; k > off && raw[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i, true
		}
	}
}

// SkipContainer returns the offset just past the object or array at off.
func SkipContainer(raw []byte, off int) (int, error) {
	depth := 0
	for i := off; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			end, ok := StringEnd(raw, i)
			if !ok {
				return 0, fmt.Errorf("%w at offset %d: unterminated string", ErrBadJSON, i)
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("%w at offset %d: unterminated container", ErrBadJSON, off)
}

// MaxDepth returns how deep the objects and arrays of raw nest (0 for a
// scalar) in one pass without recursion, so that a caller can say how
// deep a document is that a depth-limited Walk refused. It does not
// validate raw; an unterminated string ends the count.
func MaxDepth(raw []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			end, ok := StringEnd(raw, i)
			if !ok {
				return deepest
			}
			i = end - 1
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// DepthWithin reports whether the objects and arrays of raw nest at most
// max levels, so that a recursive parser (gjson's validator and getters
// recurse once per level, about 200 bytes of stack each) can be given raw
// without a hostile document taking the stack past Go's 1 GB limit. A
// document with no more than max opening brackets cannot nest deeper,
// and counting them is a vectorized scan; only a document with more is
// walked by MaxDepth.
func DepthWithin(raw []byte, max int) bool {
	if bytes.Count(raw, []byte{'['})+bytes.Count(raw, []byte{'{'}) <= max {
		return true
	}
	return MaxDepth(raw) <= max
}

// StringDepthWithin is DepthWithin of a string, read in place.
func StringDepthWithin(raw string, max int) bool {
	return DepthWithin(unsafe.Slice(unsafe.StringData(raw), len(raw)), max)
}

// FormatPath renders path elements as a gjson path.
func FormatPath(path []PathElem) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		if p.IsIndex() {
			b.WriteString(strconv.Itoa(p.Index))
		} else {
			b.WriteString(gjson.Escape(p.KeyString()))
		}
	}
	return b.String()
}

// UnescapeString decodes the body of a JSON string literal (the bytes
// between its quotes).
func UnescapeString(body []byte) (string, error) {
	out, err := jsonstr.Unescape(nil, body)
	return string(out), err
}
