// Package b64 decodes base64 straight out of the raw bytes of a JSON string
// literal, as they sit in a tool result, without unescaping the string first.
//
// The input is the text between the quotes (gjson's Result.Raw minus its first
// and last byte). One decoder accepts, auto-detected and in any mix:
//
//   - the standard (+/) or the URL-safe (-_) alphabet, padded or not; one
//     value must use one alphabet;
//   - line breaks as JSON escapes (\n, \r\n, as GitHub's contents API sends
//     them), \t, and literal spaces, tabs, CR and LF;
//   - JSON-escaped characters: \/ (PHP escapes every slash) and any \u00XX
//     escape of an ASCII character (\u002F, \u002B, \u003D, ...);
//   - a data: URI prefix, "data:<media type>;base64,".
//
// Anything else (a quote escape, a character outside the alphabet, padding in
// the middle, a final quantum of one character) is a *SyntaxError that names
// the byte offset in the input. As in encoding/base64, the unused low bits of
// a final partial quantum need not be zero.
//
// Looks is a cheap pre-filter, DecodeHead decodes only a prefix for
// magic-byte sniffing, Parse validates a whole value and measures it, and a
// Reader decodes it in fixed-size chunks with SIMD (segmentio/asm/base64).
package b64

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/segmentio/asm/base64"
)

// Character classes, one bit each, so that eight classes ORed together say
// whether a group of bytes holds anything but alphabet characters.
const (
	cStd = 1 << iota // '+' '/': standard alphabet only
	cURL             // '-' '_': URL-safe alphabet only
	cPad             // '='
	cWS              // ' ' '\t' '\r' '\n'
	cEsc             // '\\'
	cBad             // everything else

	cData = 0 // A-Z a-z 0-9
)

var class = func() (t [256]uint8) {
	for i := range t {
		t[i] = cBad
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = cData
		t[c+'a'-'A'] = cData
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = cData
	}
	t['+'], t['/'] = cStd, cStd
	t['-'], t['_'] = cURL, cURL
	t['='] = cPad
	t[' '], t['\t'], t['\r'], t['\n'] = cWS, cWS, cWS, cWS
	t['\\'] = cEsc
	return t
}()

// SyntaxError reports why a value is not base64 and where.
type SyntaxError struct {
	Msg    string // what is wrong, e.g. "invalid character 'x'"
	Offset int    // byte offset in the raw input, counting any data: prefix
}

// Error returns "b64: <Msg> at offset <Offset>".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("b64: %s at offset %d", e.Msg, e.Offset)
}

// Info describes a valid base64 value. Parse fills it.
type Info struct {
	// DataURIMediaType is the media type of a data: URI prefix, with JSON
	// escapes removed ("application/pdf"); empty without a prefix or when the
	// URI names none ("data:;base64,").
	DataURIMediaType string
	// Offset is where the base64 data starts in the raw input: 0, or the
	// length of the data: URI prefix.
	Offset int
	// URLSafe reports the URL-safe alphabet (-_). A value holding neither
	// -_ nor +/ decodes the same either way and reports false.
	URLSafe bool
	// Escaped reports a backslash escape or whitespace in the data: such
	// values decode through a compaction step, which is slower.
	Escaped bool
	// DecodedLen is the exact number of decoded bytes.
	DecodedLen int64
}

// Parse validates every byte of raw as base64 and describes it. A nil error
// means a Reader decodes raw without error to exactly Info.DecodedLen bytes.
//
// Parse runs the Reader's own code over raw into a pooled buffer and throws
// the bytes away: the SIMD decoder is the fastest validator there is, and
// Parse and the Reader cannot disagree. It does not allocate.
func Parse(raw []byte) (Info, error) {
	r := readers.Get().(*Reader)
	defer release(r)
	if err := r.Reset(raw); err != nil {
		return Info{}, err
	}
	if r.out == nil {
		r.out = make([]byte, r.chunk/4*3+len(r.small))
	}
	var n int64
	for {
		m, err := r.fill(r.out)
		n += int64(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Info{}, err
		}
	}
	if n != decodedLen(r.s.n) {
		return Info{}, fmt.Errorf("b64: internal error: decoded %d bytes, counted %d", n, decodedLen(r.s.n))
	}
	return r.Info(), nil
}

// readers holds Readers, with their buffers, for Parse and DecodeHead.
var readers = sync.Pool{New: func() any { return new(Reader) }}

// release returns r to the pool, without its input: the pool must not keep a
// document alive.
func release(r *Reader) {
	_ = r.Reset(nil)
	readers.Put(r)
}

// decodedLen is the number of bytes n base64 characters (padding excluded)
// decode to.
func decodedLen(n int64) int64 {
	return n/4*3 + [4]int64{0, 0, 1, 2}[n%4]
}

// scanner validates and compacts base64 characters out of raw. It carries
// what must be known across chunks: the alphabet, the character count and the
// padding.
type scanner struct {
	raw     []byte
	end     int   // raw[:end] holds the data; raw[end:] is trailing '=' padding
	alpha   uint8 // cStd, cURL, or 0 while undecided
	n       int64 // data characters seen, padding excluded
	last    int   // offset of the last data character
	pad     int   // '=' characters seen
	padOff  int   // offset of the first '='
	escaped bool  // an escape or whitespace was seen
}

func newScanner(raw []byte, off int) scanner {
	end := len(raw)
	for end > off && raw[end-1] == '=' {
		end--
	}
	return scanner{raw: raw, end: end, pad: len(raw) - end, padOff: end, last: off}
}

// step consumes the character or escape at raw[i], i < s.end. It returns the
// data character it denotes, 0 when it denotes none (whitespace, padding), and
// the offset after it.
func (s *scanner) step(i int) (byte, int, error) {
	c, next := s.raw[i], i+1
	k := class[c]
	if k == cEsc {
		var err error
		if c, next, err = unescape(s.raw, i); err != nil {
			return 0, i, err
		}
		s.escaped = true
		k = class[c]
	}
	switch k {
	case cData:
	case cStd, cURL:
		if s.alpha|k == cStd|cURL {
			in := " in standard-alphabet data"
			if s.alpha == cURL {
				in = " in URL-safe data"
			}
			return 0, i, &SyntaxError{Msg: charMsg(s.raw, i, next) + in, Offset: i}
		}
		s.alpha = k
	case cWS:
		s.escaped = true
		return 0, next, nil
	case cPad:
		end, err := s.padding(i)
		return 0, end, err
	default:
		return 0, i, &SyntaxError{Msg: charMsg(s.raw, i, next), Offset: i}
	}
	s.n++
	s.last = i
	return c, next, nil
}

// padding consumes raw[i:s.end], which starts with '=': only padding and
// whitespace may follow.
func (s *scanner) padding(i int) (int, error) {
	s.padOff = i
	for j := i; j < s.end; {
		c, next := s.raw[j], j+1
		if c == '\\' {
			var err error
			if c, next, err = unescape(s.raw, j); err != nil {
				return j, err
			}
			s.escaped = true
		}
		switch class[c] {
		case cPad:
			s.pad++
		case cWS:
			s.escaped = true
		case cData, cStd, cURL:
			return j, &SyntaxError{Msg: "padding in the middle of the data", Offset: i}
		default:
			return j, &SyntaxError{Msg: charMsg(s.raw, j, next), Offset: j}
		}
		j = next
	}
	return s.end, nil
}

// finish checks the final quantum once all input is consumed.
func (s *scanner) finish() error {
	r := int(s.n % 4)
	if r == 1 {
		return &SyntaxError{Msg: "truncated input: final quantum of 1 character", Offset: s.last}
	}
	if s.pad > 0 && (r == 0 || r+s.pad != 4) {
		return &SyntaxError{Msg: fmt.Sprintf("invalid padding: %d '=' after a final quantum of %d characters", s.pad, r), Offset: s.padOff}
	}
	return nil
}

// compact appends the data characters of raw[i:s.end] to dst until dst is
// full or the data ends, validating as it goes. It returns the offset after
// the last byte consumed.
func (s *scanner) compact(dst []byte, i int) ([]byte, int, error) {
	raw := s.raw[:s.end]
	n := len(dst)
	dst = dst[:cap(dst)]
	for i < len(raw) && n < len(dst) {
		// Fast path: eight alphabet characters at a time.
		for i+8 <= len(raw) && n+8 <= len(dst) {
			g := raw[i : i+8 : i+8]
			m := class[g[0]] | class[g[1]] | class[g[2]] | class[g[3]] |
				class[g[4]] | class[g[5]] | class[g[6]] | class[g[7]]
			if m&^(cStd|cURL) != 0 || m|s.alpha == cStd|cURL {
				break
			}
			s.alpha |= m
			binary.LittleEndian.PutUint64(dst[n:], binary.LittleEndian.Uint64(g))
			n += 8
			s.n += 8
			s.last = i + 7
			i += 8
		}
		// Then one byte at a time up to the next escape or odd byte.
		for i < len(raw) && n < len(dst) {
			c := raw[i]
			if k := class[c]; k != cData && (k&^(cStd|cURL) != 0 || k|s.alpha == cStd|cURL) {
				break
			} else {
				s.alpha |= k
			}
			dst[n] = c
			n++
			s.n++
			s.last = i
			i++
			if i&7 == 0 {
				break
			}
		}
		if i >= len(raw) || n >= len(dst) || class[raw[i]] == cData {
			continue
		}
		c, next, err := s.step(i)
		if err != nil {
			return dst[:n], i, err
		}
		if c != 0 {
			dst[n] = c
			n++
		}
		i = next
	}
	return dst[:n], i, nil
}

// unescape decodes the JSON escape at raw[i] == '\\' to the byte it denotes.
// Escapes of characters outside ASCII are errors: no base64 character needs
// one.
func unescape(raw []byte, i int) (byte, int, error) {
	if i+1 >= len(raw) {
		return 0, i, &SyntaxError{Msg: "truncated escape", Offset: i}
	}
	switch e := raw[i+1]; e {
	case '"', '\\', '/':
		return e, i + 2, nil
	case 'b':
		return '\b', i + 2, nil
	case 'f':
		return '\f', i + 2, nil
	case 'n':
		return '\n', i + 2, nil
	case 'r':
		return '\r', i + 2, nil
	case 't':
		return '\t', i + 2, nil
	case 'u':
		if i+6 > len(raw) {
			return 0, i, &SyntaxError{Msg: "truncated escape", Offset: i}
		}
		var v rune
		for _, h := range raw[i+2 : i+6] {
			switch {
			case '0' <= h && h <= '9':
				h -= '0'
			case 'a' <= h && h <= 'f':
				h -= 'a' - 10
			case 'A' <= h && h <= 'F':
				h -= 'A' - 10
			default:
				return 0, i, &SyntaxError{Msg: fmt.Sprintf("invalid escape %q", raw[i:i+6]), Offset: i}
			}
			v = v<<4 | rune(h)
		}
		if v >= 0x80 {
			return 0, i, &SyntaxError{Msg: fmt.Sprintf("invalid character %q (escaped as %s)", v, raw[i:i+6]), Offset: i}
		}
		return byte(v), i + 6, nil
	default:
		return 0, i, &SyntaxError{Msg: fmt.Sprintf("invalid escape %q", raw[i:i+2]), Offset: i}
	}
}

// charMsg describes the invalid character raw[i:next] (one byte or an
// escape).
func charMsg(raw []byte, i, next int) string {
	c := raw[i]
	if c == '\\' {
		c, _, _ = unescape(raw, i)
		return fmt.Sprintf("invalid character %q (escaped as %s)", rune(c), raw[i:next])
	}
	if c >= 0x80 {
		return fmt.Sprintf("invalid character '\\x%02x'", c)
	}
	return fmt.Sprintf("invalid character %q", rune(c))
}

// maxDataURIPrefix bounds the search for the comma that ends a data: URI
// prefix.
const maxDataURIPrefix = 512

// dataURI parses an optional "data:<media type>;base64," prefix. It returns
// the offset of the data and the media type with JSON escapes removed.
func dataURI(raw []byte) (int, string, error) {
	if len(raw) < 5 || !asciiEqualFold(raw[:5], "data:") {
		return 0, "", nil
	}
	comma := bytes.IndexByte(raw[:min(len(raw), maxDataURIPrefix)], ',')
	if comma < 0 {
		return 0, "", &SyntaxError{Msg: fmt.Sprintf("data URI without ',' in its first %d bytes", maxDataURIPrefix), Offset: 0}
	}
	meta := raw[5:comma]
	if len(meta) < 7 || !asciiEqualFold(meta[len(meta)-7:], ";base64") {
		return 0, "", &SyntaxError{Msg: "data URI is not ;base64", Offset: comma}
	}
	meta = meta[:len(meta)-7]
	var mt []byte
	for i := 0; i < len(meta); {
		c, next := meta[i], i+1
		if c == '\\' {
			var err error
			if c, next, err = unescape(meta, i); err != nil {
				var se *SyntaxError
				if errors.As(err, &se) {
					se.Offset += 5
				}
				return 0, "", err
			}
		}
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == ',' {
			return 0, "", &SyntaxError{Msg: "data URI media type has " + charMsg(meta, i, next), Offset: 5 + i}
		}
		mt = append(mt, c)
		i = next
	}
	return comma + 1, string(mt), nil
}

func asciiEqualFold(b []byte, lower string) bool {
	for i := range len(lower) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// DecodeHead decodes the first n bytes of raw, or all of it when it holds
// fewer, for magic-byte sniffing. It reads only about 4n/3 bytes of input and
// validates only those (and the end of the value when it gets there), so it
// is cheap on a large value; a nil error says nothing about the rest. It
// allocates only the returned slice.
func DecodeHead(raw []byte, n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	r := readers.Get().(*Reader)
	defer release(r)
	if err := r.Reset(raw); err != nil {
		return nil, err
	}
	out := make([]byte, min(n, len(raw)/4*3+3))
	m, err := io.ReadFull(r, out)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return out[:m:m], nil
}

// lookWindow is how many bytes Looks checks at each end of a value.
const lookWindow = 256

// Looks is a cheap pre-filter: it reports whether raw is at least minLen bytes
// long and its first and last lookWindow (256) bytes could be base64 as
// Parse accepts it (the alphabet, escapes of line breaks and slashes, a data:
// URI prefix, padding near the end), with little whitespace. True does not
// mean valid: call Parse before trusting it.
func Looks(raw []byte, minLen int) bool {
	if len(raw) < minLen || len(raw) == 0 {
		return false
	}
	off, _, err := dataURI(raw)
	if err != nil {
		return false
	}
	body := raw[off:]
	if len(body) <= 2*lookWindow {
		return plausible(body, true)
	}
	return plausible(body[:lookWindow], false) && plausible(body[len(body)-lookWindow:], true)
}

// plausible reports whether window w could be part of a base64 value.
func plausible(w []byte, tail bool) bool {
	ws, data := 0, 0
	for i := 0; i < len(w); i++ {
		switch class[w[i]] {
		case cData, cStd, cURL:
			data++
		case cWS:
			ws++
		case cPad:
			if !tail {
				return false
			}
		case cEsc:
			if i+1 < len(w) {
				switch w[i+1] {
				case 'n', 'r', 't':
					ws++
				case '/', 'u':
				default:
					return false
				}
				i++
			}
		default:
			return false
		}
	}
	return data > 0 && ws*16 <= len(w)+16
}

// defaultChunk is how many input characters the Reader decodes per step.
const defaultChunk = 64 << 10

// Reader decodes a base64 value incrementally. Its memory is fixed: a few
// hundred bytes, plus one chunk-sized scratch buffer (64 KiB) when the value
// holds escapes or whitespace, plus one output buffer (48 KiB) for WriteTo.
//
// Read returns a *SyntaxError where the input stops being base64; bytes
// returned before it are the correct decoding of the input before the error.
//
// Each chunk takes the first of three paths that works:
//
//   - plain: the SIMD decoder straight from the input into the caller's
//     buffer, while no escape has been seen;
//   - fast: runs between backslashes are copied to scratch, \n \r \t are
//     dropped and \/ becomes '/'; the SIMD decoder validates the result;
//   - precise: a table-driven scan that validates every byte, handles every
//     escape and whitespace, and names the offset of any error.
//
// A chunk the first two reject is redone on the precise path, so all three
// accept the same language and report the same errors.
type Reader struct {
	s         scanner
	i         int    // offset of the next unread input byte
	off       int    // where the data starts, after any data: prefix
	mediaType string // from the data: prefix
	chunk     int    // input characters per step
	plain     bool   // no escape seen yet: try decoding the input directly
	fast      bool   // the fast path has not failed on a chunk the precise one took
	carry     [4]byte
	ncarry    int
	scratch   []byte // compacted characters, allocated on the first escape
	out       []byte // WriteTo's buffer, allocated on first use
	tiny      [64]byte
	small     [48]byte
	pending   []byte // decoded bytes not yet returned, in small
	err       error
}

// NewReader returns a Reader of the base64 value raw. It fails only on a
// malformed data: URI prefix; the content is checked as it is read. The
// Reader reads raw in place: raw must not change until reading is done.
func NewReader(raw []byte) (*Reader, error) {
	return newReaderSize(raw, defaultChunk)
}

func newReaderSize(raw []byte, chunk int) (*Reader, error) {
	r := &Reader{chunk: max(chunk, 4)}
	if err := r.Reset(raw); err != nil {
		return nil, err
	}
	return r, nil
}

// Reset makes r read raw from the start, keeping its buffers, so that a pool
// of Readers decodes without allocating. The zero Reader is ready for Reset.
func (r *Reader) Reset(raw []byte) error {
	off, mt, err := dataURI(raw)
	chunk := r.chunk
	if chunk == 0 {
		chunk = defaultChunk
	}
	*r = Reader{
		s:         newScanner(raw, off),
		i:         off,
		off:       off,
		mediaType: mt,
		chunk:     chunk,
		plain:     true,
		fast:      true,
		scratch:   r.scratch,
		out:       r.out,
		err:       err,
	}
	return err
}

// Read decodes into p. It returns io.EOF after the last byte.
func (r *Reader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) >= len(r.small) {
		return r.fill(p)
	}
	n, err := r.fill(r.small[:])
	r.pending = r.small[:n]
	n = copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, err
}

// Info describes the value as far as r has read it: once Read or WriteTo
// has returned io.EOF it is what Parse returns for the value. Before, Escaped
// and URLSafe turn true as soon as a chunk holds an escape, whitespace or
// the URL-safe alphabet, and DecodedLen counts the characters consumed.
func (r *Reader) Info() Info {
	return Info{
		DataURIMediaType: r.mediaType,
		Offset:           r.off,
		URLSafe:          r.s.alpha == cURL,
		Escaped:          r.s.escaped,
		DecodedLen:       decodedLen(r.s.n),
	}
}

// WriteTo decodes the rest of the value into w, in chunks, through one
// reusable buffer. It returns the number of bytes written.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	if len(r.pending) > 0 {
		n, err := w.Write(r.pending)
		total += int64(n)
		r.pending = r.pending[n:]
		if err != nil {
			return total, err
		}
	}
	if r.out == nil {
		r.out = make([]byte, r.chunk/4*3+len(r.small))
	}
	for {
		n, err := r.fill(r.out)
		if n > 0 {
			m, werr := w.Write(r.out[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			if m < n {
				return total, io.ErrShortWrite
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// fill decodes at most one chunk into dst, len(dst) >= len(r.small).
func (r *Reader) fill(dst []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if r.i >= r.s.end {
			return r.tail(dst)
		}
		limit := min(r.chunk, len(dst)/3*4)
		if r.plain && r.ncarry == 0 {
			if n, ok := r.plainStep(dst, limit); ok {
				return n, nil
			}
		}
		if r.fast {
			if n, ok := r.fastStep(dst, limit); ok {
				if n == 0 {
					continue
				}
				return n, nil
			}
		}
		n, err := r.preciseStep(dst, limit)
		if err != nil {
			r.err = err
			return 0, err
		}
		if r.i < r.s.end {
			// Whitespace or rare escapes throughout: stop trying the others.
			r.plain, r.fast = false, false
		}
		if n == 0 {
			continue
		}
		return n, nil
	}
}

// enc returns the decoder for alphabet alpha.
func enc(alpha uint8) *base64.Encoding {
	if alpha == cURL {
		return base64.RawURLEncoding
	}
	return base64.RawStdEncoding
}

// plainStep decodes whole quanta straight from the input into dst.
func (r *Reader) plainStep(dst []byte, limit int) (int, bool) {
	k := min(limit, r.s.end-r.i) &^ 3
	if k == 0 {
		return 0, false
	}
	src := r.s.raw[r.i : r.i+k]
	alpha := r.s.alpha
	if alpha == 0 {
		alpha = alphabet(src)
	}
	n, err := enc(alpha).Decode(dst[:k/4*3], src)
	// The SIMD URL-safe decoder takes '/' for '_': check.
	if err != nil || n != k/4*3 || alpha == cURL && bytes.IndexByte(src, '/') >= 0 {
		// An escape, whitespace, padding or an error: the next paths see
		// which. The decoder stopped at the first odd byte, so this was
		// cheap unless that byte lies deep in the chunk.
		return 0, false
	}
	r.s.alpha = alpha
	r.s.n += int64(k)
	r.s.last = r.i + k - 1
	r.i += k
	return n, true
}

// alphabet returns the alphabet the characters in b belong to: cStd, cURL, 0
// for either, cStd|cURL for a mix.
func alphabet(b []byte) uint8 {
	var a uint8
	if bytes.IndexByte(b, '+') >= 0 || bytes.IndexByte(b, '/') >= 0 {
		a |= cStd
	}
	if bytes.IndexByte(b, '-') >= 0 || bytes.IndexByte(b, '_') >= 0 {
		a |= cURL
	}
	return a
}

// buffer returns the scratch space for compacting at most limit characters.
func (r *Reader) buffer(limit int) []byte {
	if r.scratch == nil {
		if need := min(limit, r.s.end-r.i+r.ncarry); need <= len(r.tiny) {
			return r.tiny[:need:need]
		}
		r.scratch = make([]byte, r.chunk)
	}
	return r.scratch[:limit:limit]
}

// fastStep copies the runs between escapes into scratch, dropping \n \r \t
// and turning \/ into '/', and decodes the whole quanta with the SIMD decoder,
// which validates them. It leaves r as it was and reports false where the
// chunk needs the precise path.
func (r *Reader) fastStep(dst []byte, limit int) (int, bool) {
	raw := r.s.raw[:r.s.end]
	buf := r.buffer(limit)
	n := copy(buf, r.carry[:r.ncarry])
	i, last, escaped := r.i, r.s.last, false
	for i < len(raw) && n < len(buf) {
		seg := raw[i:min(len(raw), i+len(buf)-n)]
		j := bytes.IndexByte(seg, '\\')
		if j < 0 {
			j = len(seg)
		}
		if j > 0 {
			copy(buf[n:], seg[:j])
			n += j
			i += j
			last = i - 1
		}
		if j == len(seg) {
			continue
		}
		if i+1 >= len(raw) {
			return 0, false
		}
		switch raw[i+1] {
		case 'n', 'r', 't':
		case '/':
			buf[n] = '/'
			n++
			last = i
		default:
			return 0, false
		}
		escaped = true
		i += 2
	}
	k := n &^ 3
	alpha := r.s.alpha
	if alpha == 0 {
		alpha = alphabet(buf[:n])
	} else if alpha == cURL && bytes.IndexByte(buf[:n], '/') >= 0 {
		return 0, false
	}
	if alpha == cStd|cURL {
		return 0, false
	}
	// The characters carried to the next chunk are not decoded now.
	for _, c := range buf[k:n] {
		if cl := class[c]; cl != cData && cl != alpha {
			return 0, false
		}
	}
	m, err := enc(alpha).Decode(dst[:k/4*3], buf[:k])
	if err != nil || m != k/4*3 {
		return 0, false
	}
	r.s.alpha = alpha
	r.s.n += int64(n - r.ncarry)
	r.s.last = last
	r.i = i
	if escaped {
		r.s.escaped = true
		r.plain = false
	}
	r.ncarry = copy(r.carry[:], buf[k:n])
	return m, true
}

// preciseStep compacts up to limit characters with the scanner, which
// validates every byte, and decodes the whole quanta.
func (r *Reader) preciseStep(dst []byte, limit int) (int, error) {
	buf := r.buffer(limit)
	buf = buf[:copy(buf, r.carry[:r.ncarry])]
	buf, i, err := r.s.compact(buf, r.i)
	r.i = i
	if err != nil {
		return 0, err
	}
	k := len(buf) &^ 3
	r.ncarry = copy(r.carry[:], buf[k:])
	if k == 0 {
		return 0, nil
	}
	n, err := enc(r.s.alpha).Decode(dst[:k/4*3], buf[:k])
	if err != nil || n != k/4*3 {
		return 0, internalError(r.i, err)
	}
	return n, nil
}

// tail validates the end of the value and decodes its last partial quantum.
func (r *Reader) tail(dst []byte) (int, error) {
	if err := r.s.finish(); err != nil {
		r.err = err
		return 0, err
	}
	r.err = io.EOF
	if r.ncarry == 0 {
		return 0, io.EOF
	}
	n, err := enc(r.s.alpha).Decode(dst[:3], r.carry[:r.ncarry])
	r.ncarry = 0
	if err != nil {
		r.err = internalError(r.i, err)
		return 0, r.err
	}
	return n, nil
}

// internalError reports the SIMD decoder rejecting input the scanner
// validated: a bug, never bad input.
func internalError(off int, err error) error {
	if err == nil {
		err = io.ErrShortBuffer
	}
	return fmt.Errorf("b64: internal error: decoding validated input before offset %d: %w", off, err)
}
