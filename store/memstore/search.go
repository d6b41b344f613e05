package memstore

// Search: a term-frequency scorer over the text parts an Annotator was
// given, line by line, as the fsstore's FTS5 index ranks them.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/searchq"
)

var (
	_ store.Annotator = (*Store)(nil)
	_ store.Searcher  = (*Store)(nil)
)

// DefaultSearchLimit is how many hits Search returns when limit < 1.
const DefaultSearchLimit = 10

// snippetRunes is how many characters of a line a hit's snippet keeps.
const snippetRunes = 200

// line is one indexed line of an artifact.
type line struct {
	place  string
	text   string
	tokens []string
}

// indexed is an artifact's search text, split into lines and tokenized
// by the first Search that reads it rather than by Annotate: the 20,000
// lines of a 1 MB JSON result take milliseconds, which the call that
// stored it would wait for (the fsstore indexes beside the call too).
type indexed struct {
	once  sync.Once
	parts []store.TextPart // until lines are made
	lines []line
}

// get returns the lines, making them on first use.
func (x *indexed) get() []line {
	x.once.Do(func() {
		for _, p := range x.parts {
			store.EachLine(p, func(place, text string) bool {
				x.lines = append(x.lines, line{place: place, text: text, tokens: searchq.Tokens(text)})
				return true
			})
		}
		x.parts = nil
	})
	return x.lines
}

// indexParts keeps parts for Search, which indexes them one entry per
// line that holds a word (places as the fsstore gives them). The caller
// holds s.mu.
func (s *Store) indexParts(id string, parts []store.TextPart) {
	if s.lines == nil {
		s.lines = map[string]*indexed{}
	}
	if len(parts) == 0 {
		delete(s.lines, id)
		return
	}
	s.lines[id] = &indexed{parts: parts}
}

// ctxCheckLines is how many lines Search scores between looks at its
// context: a search that its caller left stops within a few ms.
const ctxCheckLines = 256

// Search returns the best limit lines that hold every term of query, among
// the artifacts put under a scope that scope contains. A line scores the
// sum of its terms' counts over the square root of its length. It stops
// with ctx's error when ctx ends.
func (s *Store) Search(ctx context.Context, scope store.Scope, query string, limit int) ([]store.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: search: %w", err)
	}
	terms := searchq.Parse(query)
	if len(terms) == 0 {
		return nil, fmt.Errorf("memstore: search: %w", store.ErrBadQuery)
	}
	if limit < 1 {
		limit = DefaultSearchLimit
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("memstore: search: %w", store.ErrClosed)
	}
	var hits []store.Hit
	entries := s.cat.Entries()
	// Newest first, so that the stable sort below puts the newest
	// artifact first among equal scores, as the fsstore does.
	slices.Reverse(entries)
	for _, e := range entries {
		x := s.lines[e.Ref.ID]
		if x == nil {
			continue
		}
		i, ok := e.ScopeOf(scope)
		if !ok {
			continue
		}
		lines := x.get()
		ref := s.named(e.As(i))
		for n, l := range lines {
			if n%ctxCheckLines == 0 {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("memstore: search: %w", err)
				}
			}
			score := 0.0
			for _, t := range terms {
				n := count(l.tokens, t.Tokens)
				if n == 0 {
					score = 0
					break
				}
				score += float64(n)
			}
			if score > 0 {
				hits = append(hits, store.Hit{Ref: ref, Place: l.place, Snippet: snippet(l.text), Score: score / math.Sqrt(float64(len(l.tokens)))})
			}
		}
	}
	// Stable: equal scores keep the newest artifact first.
	slices.SortStableFunc(hits, func(a, b store.Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return hits[:min(limit, len(hits))], nil
}

// count returns how often phrase occurs in tokens.
func count(tokens, phrase []string) int {
	n := 0
	for i := 0; i+len(phrase) <= len(tokens); i++ {
		if slices.Equal(tokens[i:i+len(phrase)], phrase) {
			n++
		}
	}
	return n
}

// snippet returns text cut to snippetRunes characters.
func snippet(text string) string {
	if utf8.RuneCountInString(text) <= snippetRunes {
		return text
	}
	r := []rune(text)
	return strings.TrimSpace(string(r[:snippetRunes])) + "…"
}
