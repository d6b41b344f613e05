// Package jsonstr escapes and unescapes JSON string literals without
// reflection and without allocating beyond the destination buffer.
//
// The engine unescapes JSON-in-text carriers (a text block whose text is a
// JSON document) and re-escapes them after a rewrite; both run over payloads
// of many megabytes, so runs without escapes are copied in bulk.
package jsonstr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every unescape error.
var ErrSyntax = errors.New("jsonstr: invalid string literal")

// Unescape appends the decoded content of a JSON string literal body (the
// bytes between the quotes) to dst.
func Unescape(dst, src []byte) ([]byte, error) {
	out, _, err := unescape(dst, src, 0)
	return out, err
}

// Run is a span of an unescaped body, [Off, End) in the destination.
type Run struct{ Off, End int }

// UnescapeRuns is Unescape that also returns the runs of at least minRun
// bytes it copied verbatim from src (offsets in the returned slice, in
// order). When src is the body of a valid string literal (no raw quote or
// control character: a validating walk checked it) a verbatim run holds no
// quote, backslash or control character, since the decoded text has those
// only where src has an escape: a scan of the decoded text for them may
// skip the runs. A minRun below 1 is 1.
func UnescapeRuns(dst, src []byte, minRun int) ([]byte, []Run, error) {
	return unescape(dst, src, max(minRun, 1))
}

// unescape decodes src onto dst in one pass: runs between escapes are
// copied in bulk into room reserved up front (a decoded escape is never
// longer than its source). It records the verbatim runs of at least
// minRun bytes when minRun > 0.
func unescape(dst, src []byte, minRun int) ([]byte, []Run, error) {
	var runs []Run
	verbatim := func(n int) {
		dst = append(dst, src[:n]...)
		if minRun > 0 && n >= minRun {
			runs = append(runs, Run{len(dst) - n, len(dst)})
		}
		src = src[n:]
	}
	i := bytes.IndexByte(src, '\\')
	if i < 0 {
		verbatim(len(src))
		return dst, runs, nil
	}
	if cap(dst)-len(dst) < len(src) {
		// make, not append: a large buffer fresh from the OS is not
		// zeroed again, and this one is written once, run by run.
		grown := make([]byte, len(dst), len(dst)+len(src))
		copy(grown, dst)
		dst = grown
	}
	for i >= 0 {
		verbatim(i)
		out, n, err := unescapeOne(dst, src)
		if err != nil {
			return out, runs, err
		}
		dst, src = out, src[n:]
		i = bytes.IndexByte(src, '\\')
	}
	verbatim(len(src))
	return dst, runs, nil
}

// LongestVerbatim returns the longest run of src, the body of a string
// literal, that holds no escape: src[off:end] is also what Unescape makes
// of it, byte for byte. It is empty when src is escapes only. The search
// stops at a bad escape, which Unescape reports.
func LongestVerbatim(src []byte) (off, end int) {
	for i := 0; ; {
		k := bytes.IndexByte(src[i:], '\\')
		if k < 0 {
			k = len(src) - i
		}
		if k > end-off {
			off, end = i, i+k
		}
		i += k
		if i >= len(src) {
			return off, end
		}
		n := EscapeLen(src[i:])
		if n == 0 {
			return off, end
		}
		i += n
	}
}

// EscapeLen is the length of the valid escape at the start of b, 0 when it
// is not one (a \uXXXX escape is 6 bytes: a surrogate pair is two).
func EscapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if _, ok := Hex4(b[2:]); ok {
			return 6
		}
	}
	return 0
}

// unescapeOne decodes the escape at the start of src and reports how many
// source bytes it used.
func unescapeOne(dst, src []byte) ([]byte, int, error) {
	if len(src) < 2 {
		return dst, 0, fmt.Errorf("%w: lone backslash at end", ErrSyntax)
	}
	switch c := src[1]; c {
	case '"', '\\', '/':
		return append(dst, c), 2, nil
	case 'b':
		return append(dst, '\b'), 2, nil
	case 'f':
		return append(dst, '\f'), 2, nil
	case 'n':
		return append(dst, '\n'), 2, nil
	case 'r':
		return append(dst, '\r'), 2, nil
	case 't':
		return append(dst, '\t'), 2, nil
	case 'u':
		r, ok := Hex4(src[2:])
		if !ok {
			return dst, 0, fmt.Errorf("%w: bad \\u escape", ErrSyntax)
		}
		n := 6
		if utf16.IsSurrogate(r) {
			r2, ok := rune(-1), false
			if len(src) >= 12 && src[6] == '\\' && src[7] == 'u' {
				r2, ok = Hex4(src[8:])
			}
			if ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r, n = dec, 12
				} else {
					r = utf8.RuneError
				}
			} else {
				r = utf8.RuneError
			}
		}
		return utf8.AppendRune(dst, r), n, nil
	default:
		return dst, 0, fmt.Errorf("%w: unknown escape \\%c", ErrSyntax, c)
	}
}

// Hex4 decodes the four hex digits of a \uXXXX escape (b holds at least
// them; more are ignored).
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// needsEscape marks the bytes Append must escape.
var needsEscape = func() (t [256]bool) {
	for i := 0; i < 0x20; i++ {
		t[i] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// Append appends s as a quoted JSON string literal to dst. Bytes that are not
// valid UTF-8 are kept as they are, as gjson and most JSON readers accept.
func Append(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape[c] {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendString is Append for a string.
func AppendString(dst []byte, s string) []byte {
	return Append(dst, []byte(s))
}

// Reader streams the unescaped content of a JSON string literal body. It
// decodes into the caller's buffer, so a 100 MB string never needs a second
// 100 MB buffer, and fills it: a store that writes what each Read returns
// makes one write per buffer, not one per run between escapes (a snapshot
// with an escape every dozen bytes made 70,000 writes for 600 KB).
type Reader struct {
	src     []byte
	pending []byte // decoded bytes of an escape that did not fit in p
	scratch [utf8.UTFMax]byte
	err     error
}

// NewReader returns a Reader over the body of a JSON string literal.
func NewReader(src []byte) *Reader { return &Reader{src: src} }

// Read implements io.Reader. It returns a short count only at the end of
// the string or before an error, which the next Read returns.
func (r *Reader) Read(p []byte) (int, error) {
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	src := r.src
	for n < len(p) && len(src) > 0 && r.err == nil {
		// Look for the next escape only as far as p has room: a string
		// without escapes is scanned once in all, not once per Read.
		i := indexBackslash(src[:min(len(src), len(p)-n)])
		n += copy(p[n:], src[:i])
		src = src[i:]
		if n == len(p) || len(src) == 0 {
			break
		}
		// src[0] is a backslash. The common escapes are one byte.
		if len(src) >= 2 {
			if c := simpleEscape[src[1]]; c != 0 {
				p[n] = c
				n++
				src = src[2:]
				continue
			}
		}
		// \u decodes to at most utf8.UTFMax bytes: straight into p when
		// they fit, else through scratch.
		fits := len(p)-n >= utf8.UTFMax
		dst := p[n:n:len(p)]
		if !fits {
			dst = r.scratch[:0]
		}
		out, k, err := unescapeOne(dst, src)
		if err != nil {
			r.err = err
			break
		}
		src = src[k:]
		if fits {
			n += len(out)
		} else {
			c := copy(p[n:], out)
			r.pending = out[c:]
			n += c
		}
	}
	r.src = src
	switch {
	case n > 0 || len(p) == 0:
		return n, nil
	case r.err != nil:
		return 0, r.err
	default:
		return 0, io.EOF
	}
}

// simpleEscape maps the byte after a backslash to the byte it stands for,
// for the escapes of one byte; 0 for \u and invalid escapes.
var simpleEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// indexBackslash returns the index of the first backslash in b, or len(b).
// Text such as an accessibility snapshot has an escape every dozen bytes:
// the first 32 are searched eight at a time inline, where a bytes.IndexByte
// call costs more than the search; longer runs go to IndexByte.
func indexBackslash(b []byte) int {
	const ones, highs, backslashes = 0x0101010101010101, 0x8080808080808080, 0x5c5c5c5c5c5c5c5c
	i := 0
	for ; i+8 <= len(b) && i < 32; i += 8 {
		// a zero byte in x is a backslash in b; the lowest flagged byte is
		// exact (a borrow only flags bytes above a zero)
		x := binary.LittleEndian.Uint64(b[i:]) ^ backslashes
		if z := (x - ones) &^ x & highs; z != 0 {
			return i + bits.TrailingZeros64(z)/8
		}
	}
	if len(b)-i < 8 {
		for ; i < len(b); i++ {
			if b[i] == '\\' {
				return i
			}
		}
		return len(b)
	}
	if j := bytes.IndexByte(b[i:], '\\'); j >= 0 {
		return i + j
	}
	return len(b)
}

// HasLoneSurrogate reports a \uD800-\uDFFF escape in a JSON string body
// that is not half of a pair: UTF-8 cannot hold it, so Unescape would turn
// it into U+FFFD.
func HasLoneSurrogate(body []byte) bool {
	for i := 0; i+5 < len(body); i++ {
		if body[i] != '\\' {
			// jump to the next backslash: most text has few
			j := bytes.IndexByte(body[i:], '\\')
			if j < 0 {
				return false
			}
			i += j
			if i+5 >= len(body) {
				return false
			}
		}
		if body[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := Hex4(body[i+2 : i+6])
		if !ok || r < 0xd800 || r > 0xdfff {
			i += 5
			continue
		}
		if r >= 0xdc00 {
			return true // a low half first
		}
		if i+11 >= len(body) || body[i+6] != '\\' || body[i+7] != 'u' {
			return true
		}
		r2, ok := Hex4(body[i+8 : i+12])
		if !ok || r2 < 0xdc00 || r2 > 0xdfff {
			return true
		}
		i += 11
	}
	return false
}
