package query

import "bytes"

// finder finds a literal by its rarest byte: bytes.IndexByte (vectorised)
// to that byte, then a compare. bytes.Index starts from the needle's first
// bytes, and a needle that starts with common ones (" ms from 10.0.3.")
// falls back to a slower search when every line holds that start.
type finder struct {
	needle []byte
	at     int // the rarest byte's offset in needle
}

func newFinder(needle []byte) finder {
	at := 0
	for i, c := range needle {
		if byteRank(c) <= byteRank(needle[at]) {
			at = i
		}
	}
	return finder{needle, at}
}

// index is bytes.Index(h, f.needle).
func (f finder) index(h []byte) int {
	n, rare := len(f.needle), f.needle[f.at]
	for i := f.at; i < len(h); {
		j := bytes.IndexByte(h[i:], rare)
		if j < 0 {
			return -1
		}
		p := i + j - f.at
		if p+n > len(h) {
			return -1
		}
		if bytes.Equal(h[p:p+n], f.needle) {
			return p
		}
		i += j + 1
	}
	return -1
}

// byteRank guesses how common c is in text and logs: higher is commoner.
func byteRank(c byte) int {
	switch {
	case c == ' ' || c == 'e' || c == 't' || c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 's' || c == 'r':
		return 9
	case c >= '0' && c <= '9', c == '.' || c == ':' || c == '-' || c == '/' || c == '"' || c == ',' || c == '\n' || c == '\t':
		return 8
	case c == 'h' || c == 'l' || c == 'd' || c == 'c' || c == 'u' || c == 'm':
		return 7
	case c >= 'a' && c <= 'z', c == '_' || c == '=' || c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}':
		return 6
	case c >= 'A' && c <= 'Z':
		return 4
	case c >= 0x80:
		return 3
	}
	return 2
}
