// Package searchq parses the search queries of store.Searcher: words and
// "quoted phrases", each split into tokens the way SQLite FTS5's unicode61
// tokenizer splits text (runs of letters and digits, lower-cased), so the
// fsstore's FTS5 index and the memstore's scorer agree on what matches.
package searchq

import (
	"strings"
	"unicode"
)

// Term is one word or phrase of a query: its tokens must occur in this
// order, next to each other.
type Term struct {
	Tokens []string
}

// Parse splits q into terms: a "quoted phrase" is one term, every other
// run of non-space characters another. An unclosed quote runs to the end.
// Terms with no letter or digit ("-", "*") are dropped; nothing in q is
// an operator.
func Parse(q string) []Term {
	var terms []Term
	add := func(s string) {
		if toks := Tokens(s); len(toks) > 0 {
			terms = append(terms, Term{Tokens: toks})
		}
	}
	for q != "" {
		q = strings.TrimLeftFunc(q, unicode.IsSpace)
		if q == "" {
			break
		}
		if q[0] == '"' {
			end := strings.IndexByte(q[1:], '"')
			if end < 0 {
				add(q[1:])
				break
			}
			add(q[1 : 1+end])
			q = q[2+end:]
			continue
		}
		end := strings.IndexFunc(q, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(q)
		}
		add(q[:end])
		q = q[end:]
	}
	return terms
}

// Tokens splits s into lower-cased runs of letters and digits.
func Tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !IsTokenRune(r) })
}

// IsTokenRune reports whether r is part of a token: a letter or digit.
func IsTokenRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// FTS5 returns terms as an FTS5 MATCH expression: each term a quoted FTS5
// string (a phrase), all of them required (implicit AND). Only tokens go
// in, so no input makes a syntax error.
func FTS5(terms []Term) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.Join(t.Tokens, " "))
		b.WriteByte('"')
	}
	return b.String()
}
