package engine

import (
	"encoding/base64"
	"strings"
)

// Base64Shape is how a base64 original was written when it was not plain
// standard padded base64 on one line: its data: URI prefix, alphabet,
// padding and line breaks. An ArtifactRef carries it (as "encoding") when
// the stored bytes are the decoded ones, so the original string is
// Encode(stored bytes), byte for byte. An original that no shape rebuilds
// exactly (stray whitespace, lines of several widths, set bits past the
// last byte) is stored as the string itself, with no shape.
type Base64Shape struct {
	// Prefix is the data: URI prefix as written ("data:image/png;base64,").
	Prefix string `json:"prefix,omitempty"`
	// Alphabet is "url" for the URL-safe alphabet (-_); empty is standard.
	Alphabet string `json:"alphabet,omitempty"`
	// Unpadded is set when the final quantum has no '=' padding.
	Unpadded bool `json:"unpadded,omitempty"`
	// LineWidth breaks the base64 text into lines of this many characters
	// (the last may be shorter), each ending in LineEnd; 0 is one line.
	LineWidth int `json:"line_width,omitempty"`
	// LineEnd is "\n" or "\r\n".
	LineEnd string `json:"line_end,omitempty"`
	// FinalLineEnd is set when the last line ends in LineEnd too.
	FinalLineEnd bool `json:"final_line_end,omitempty"`
}

// Encode writes b in the shape: the original string of an artifact whose
// ref carries this shape, given the artifact's bytes.
func (s *Base64Shape) Encode(b []byte) string {
	enc := base64.StdEncoding
	if s.Alphabet == "url" {
		enc = base64.URLEncoding
	}
	if s.Unpadded {
		enc = enc.WithPadding(base64.NoPadding)
	}
	text := enc.EncodeToString(b)
	var out strings.Builder
	out.Grow(len(s.Prefix) + len(text) + len(text)/max(s.LineWidth, 1)*len(s.LineEnd) + len(s.LineEnd))
	out.WriteString(s.Prefix)
	if s.LineWidth <= 0 {
		out.WriteString(text)
		return out.String()
	}
	for len(text) > s.LineWidth {
		out.WriteString(text[:s.LineWidth])
		out.WriteString(s.LineEnd)
		text = text[s.LineWidth:]
	}
	out.WriteString(text)
	if s.FinalLineEnd {
		out.WriteString(s.LineEnd)
	}
	return out.String()
}

// describeBase64 returns the shape that rebuilds the string value orig
// from its decoded bytes, nil when plain standard base64 does, and false
// when no shape rebuilds it exactly. prefixLen is the length of orig's
// data: URI prefix; urlSafe reports the URL-safe alphabet.
func describeBase64(orig string, prefixLen int, urlSafe bool, decoded []byte) (*Base64Shape, bool) {
	s := &Base64Shape{Prefix: orig[:prefixLen]}
	if urlSafe {
		s.Alphabet = "url"
	}
	text := orig[prefixLen:]
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		s.LineEnd = "\n"
		if i > 0 && text[i-1] == '\r' {
			s.LineEnd = "\r\n"
			i--
		}
		s.LineWidth = i
		s.FinalLineEnd = strings.HasSuffix(text, s.LineEnd)
		if s.LineWidth == 0 {
			return nil, false
		}
	}
	data := strings.TrimRight(strings.TrimSuffix(text, s.LineEnd), "\r\n")
	s.Unpadded = len(decoded)%3 != 0 && !strings.HasSuffix(data, "=")
	if s.Encode(decoded) != orig {
		return nil, false
	}
	if *s == (Base64Shape{}) {
		return nil, true
	}
	return s, true
}
