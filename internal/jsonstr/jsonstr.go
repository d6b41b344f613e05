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
// decodes a bounded chunk at a time, so a 100 MB string never needs a second
// 100 MB buffer.
type Reader struct {
	src []byte
	buf []byte
	err error
}

// NewReader returns a Reader over the body of a JSON string literal.
func NewReader(src []byte) *Reader { return &Reader{src: src} }

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if len(r.src) == 0 {
			return 0, io.EOF
		}
		// Fast path: copy straight into p when the next run has no escape.
		i := bytes.IndexByte(r.src, '\\')
		if i != 0 {
			if i < 0 {
				i = len(r.src)
			}
			n := copy(p, r.src[:i])
			r.src = r.src[n:]
			return n, nil
		}
		var n int
		r.buf, n, r.err = unescapeOne(r.buf[:0], r.src)
		if r.err != nil {
			return 0, r.err
		}
		r.src = r.src[n:]
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// HasLoneSurrogate reports a \uD800-\uDFFF escape in a JSON string body
// that is not half of a pair: UTF-8 cannot hold it, so Unescape would turn
// it into U+FFFD.
func HasLoneSurrogate(body []byte) bool {
	for i := 0; i+5 < len(body); i++ {
		if body[i] != '\\' {
			continue
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
