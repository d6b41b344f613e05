package s3store

// Search: a scan of the text parts Annotate kept (text/<id>), newest
// artifact first, scored line by line as memstore scores them. There is
// no index in the bucket: a search reads the parts of the newest
// artifacts in scope until Config.SearchCandidates lines matched.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/searchq"
)

// DefaultSearchLimit is how many hits Search returns when limit < 1.
const DefaultSearchLimit = 10

// snippetRunes is how many characters of a line a hit's snippet keeps.
const snippetRunes = 200

// maxTextBytes bounds the text parts of one artifact Search reads.
const maxTextBytes = 64 << 20

// ctxCheckLines is how many lines Search scores between looks at its
// context: a search that its caller left stops within a few ms.
const ctxCheckLines = 256

// searcher scans the text parts Annotate kept.
type searcher struct {
	candidates int // Config.SearchCandidates
	life       *openState
	bucket     *bucket
	records    *records
}

// search returns the best limit lines that hold every term of query,
// among the artifacts put under a scope that scope contains. A line
// scores the sum of its terms' counts over the square root of its length.
// It stops with ctx's error when ctx ends.
func (x *searcher) search(ctx context.Context, scope store.Scope, query string, limit int) ([]store.Hit, error) {
	if err := x.life.usable(ctx); err != nil {
		return nil, fmt.Errorf("s3store: search: %w", err)
	}
	terms := searchq.Parse(query)
	if len(terms) == 0 {
		return nil, fmt.Errorf("s3store: search: %w", store.ErrBadQuery)
	}
	if limit < 1 {
		limit = DefaultSearchLimit
	}
	hits, err := x.scan(ctx, scope, terms)
	if err != nil {
		return nil, fmt.Errorf("s3store: search: %w", err)
	}
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

func (x *searcher) scan(ctx context.Context, scope store.Scope, terms []searchq.Term) ([]store.Hit, error) {
	texts := map[string]bool{}
	for obj, err := range x.bucket.keys(ctx, "text/", "") {
		if err != nil {
			return nil, err
		}
		texts[strings.TrimPrefix(obj.key, x.bucket.key("text/", ""))] = true
	}
	var hits []store.Hit
	if len(texts) == 0 {
		return nil, nil
	}
	for obj, err := range x.bucket.keys(ctx, "rorder/", "") {
		if err != nil {
			return nil, err
		}
		e, ok := parseOrderName(strings.TrimPrefix(obj.key, x.bucket.key("rorder/", "")), true)
		if !ok || !texts[e.id] {
			continue
		}
		delete(texts, e.id)
		rec, _, ok, err := x.records.get(ctx, e.id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		ref, ok, err := x.records.refIn(ctx, e.id, rec, scope)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		b, _, err := x.bucket.getBytes(ctx, x.bucket.key("text/", e.id), maxTextBytes)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var parts []store.TextPart
		if err := json.Unmarshal(b, &parts); err != nil {
			return nil, fmt.Errorf("text/%s: %w", e.id, err)
		}
		scored := 0
		for _, p := range parts {
			store.EachLine(p, func(place, line string) bool {
				if scored++; scored%ctxCheckLines == 0 && ctx.Err() != nil {
					return false
				}
				if score := scoreLine(searchq.Tokens(line), terms); score > 0 {
					hits = append(hits, store.Hit{Ref: ref, Place: place, Snippet: snippet(line), Score: score})
				}
				return len(hits) < x.candidates
			})
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(hits) >= x.candidates || len(texts) == 0 {
			break
		}
	}
	return hits, nil
}

// scoreLine is memstore's score: 0 unless every term occurs.
func scoreLine(tokens []string, terms []searchq.Term) float64 {
	score := 0.0
	for _, t := range terms {
		n := 0
		for i := 0; i+len(t.Tokens) <= len(tokens); i++ {
			if slices.Equal(tokens[i:i+len(t.Tokens)], t.Tokens) {
				n++
			}
		}
		if n == 0 {
			return 0
		}
		score += float64(n)
	}
	return score / math.Sqrt(float64(len(tokens)))
}

// snippet returns text cut to snippetRunes characters.
func snippet(text string) string {
	if utf8.RuneCountInString(text) <= snippetRunes {
		return text
	}
	r := []rune(text)
	return strings.TrimSpace(string(r[:snippetRunes])) + "…"
}
