package wasm

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeLogLine makes a guest's log message one line of printable text: a
// guest must not forge log lines (a newline then a fake timestamp and
// level) nor drive the operator's terminal (escape sequences). Control
// characters (C0, DEL, C1), line and paragraph separators and the bidi
// overrides become Go escapes (\n, \x1b, \u202e); the backslash is doubled
// so an escape in the output always came from the host. Invalid UTF-8
// becomes U+FFFD.
func escapeLogLine(s string) string {
	clean := true
	for _, r := range s {
		if needsEscape(r) || r == '\\' || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case needsEscape(r):
			q := strconv.QuoteRuneToASCII(r) // '\n', '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		(r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') || r == '\u200e' || r == '\u200f'
}
