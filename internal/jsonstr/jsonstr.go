// Package jsonstr escapes and unescapes JSON string literals without
// reflection and without allocating beyond the destination buffer.
//
// The engine unescapes JSON-in-text carriers (a text block whose text is a
// JSON document) and re-escapes them after a rewrite; both run over payloads
// of many megabytes, so runs without escapes are copied in bulk.
package jsonstr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every unescape error.
var ErrSyntax = errors.New("jsonstr: invalid string literal")

// Unescape appends the decoded content of a JSON string literal body (the
// bytes between the quotes) to dst.
func Unescape(dst, src []byte) ([]byte, error) {
	if cap(dst)-len(dst) < len(src) {
		n := make([]byte, len(dst), len(dst)+len(src))
		copy(n, dst)
		dst = n
	}
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\\')
		if i < 0 {
			return append(dst, src...), nil
		}
		dst = append(dst, src[:i]...)
		src = src[i:]
		var n int
		var err error
		dst, n, err = unescapeOne(dst, src)
		if err != nil {
			return dst, err
		}
		src = src[n:]
	}
	return dst, nil
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
	for n < len(p) && len(r.src) > 0 && r.err == nil {
		// Look for the next escape only as far as p has room: a string
		// without escapes is scanned once in all, not once per Read.
		run := r.src[:min(len(r.src), len(p)-n)]
		if i := bytes.IndexByte(run, '\\'); i >= 0 {
			run = run[:i]
		}
		n += copy(p[n:], run)
		r.src = r.src[len(run):]
		if n == len(p) || len(r.src) == 0 || r.src[0] != '\\' {
			continue
		}
		// An escape decodes to at most utf8.UTFMax bytes: straight into p
		// when they fit, else through scratch.
		dst := p[n:n:len(p)]
		if len(p)-n < utf8.UTFMax {
			dst = r.scratch[:0]
		}
		out, k, err := unescapeOne(dst, r.src)
		if err != nil {
			r.err = err
			break
		}
		r.src = r.src[k:]
		if len(p)-n < utf8.UTFMax {
			c := copy(p[n:], out)
			r.pending = out[c:]
			n += c
		} else {
			n += len(out)
		}
	}
	switch {
	case n > 0 || len(p) == 0:
		return n, nil
	case r.err != nil:
		return 0, r.err
	default:
		return 0, io.EOF
	}
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
