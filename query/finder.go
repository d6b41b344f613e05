package query

import "bytes"

// finder finds a literal by its rarest byte: bytes.IndexByte (vectorised)
// to that byte, then a compare. bytes.Index starts from the needle's first
// bytes, and a needle that starts with common ones (" ms from 10.0.3.")
// falls back to a slower search when every line holds that start.
type finder struct {
	needle []byte
	at     int  // the rarest byte's offset in needle
	fold   bool // match ASCII letters in either case (see foldable)
}

func newFinder(needle []byte, fold bool) finder {
	at := 0
	for i, c := range needle {
		if byteRank(lower(c)) <= byteRank(lower(needle[at])) {
			at = i
		}
	}
	return finder{needle, at, fold}
}

// foldablePiece is the longest piece of a case-folded literal that ASCII
// case alone finds: no byte over 0x7f, and no k or s, which also fold to
// the Kelvin sign and the long s ("error request" gives "error reque").
func foldablePiece(lit string) string {
	best, start := "", 0
	for i := 0; i <= len(lit); i++ {
		if i < len(lit) {
			if c := lower(lit[i]); c < 0x80 && c != 'k' && c != 's' {
				continue
			}
		}
		if i-start > len(best) {
			best = lit[start:i]
		}
		start = i + 1
	}
	return best
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// index is bytes.Index(h, f.needle), or its ASCII case-folded variant.
func (f finder) index(h []byte) int {
	n, rare := len(f.needle), f.needle[f.at]
	lo, up := lower(rare), upper(rare)
	if !f.fold {
		lo, up = rare, rare
	}
	nextLo, nextUp := -2, -2 // -2: not searched yet; -1: none left
	for i := f.at; i < len(h); {
		if nextLo != -1 && nextLo < i {
			if nextLo = bytes.IndexByte(h[i:], lo); nextLo >= 0 {
				nextLo += i
			}
		}
		if lo == up {
			nextUp = nextLo
		} else if nextUp != -1 && nextUp < i {
			if nextUp = bytes.IndexByte(h[i:], up); nextUp >= 0 {
				nextUp += i
			}
		}
		j := nextLo
		if j < 0 || (nextUp >= 0 && nextUp < j) {
			j = nextUp
		}
		if j < 0 {
			return -1
		}
		p := j - f.at
		if p+n > len(h) {
			return -1
		}
		if (!f.fold && bytes.Equal(h[p:p+n], f.needle)) || (f.fold && bytes.EqualFold(h[p:p+n], f.needle)) {
			return p
		}
		i = j + 1
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
