package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

var searchCmd = command{
	name:     "artifacts search",
	brief:    "find lines in the stored text, best first",
	synopsis: "[--config FILE] [--store DIR] [--scope FIELD=VALUE]... [--limit N] [--json] QUERY",
	about: `
Search finds lines in the text of the stored artifacts (large text
results, PDF pages, archive members: what their summaries indexed) and
prints the best first, the newest artifact first among equal hits, one a
line: ID, PLACE (line N, page N, entry NAME), when the artifact was
stored (UTC), the call that stored it (SERVER/TOOL) and the line. QUERY
is words that must all occur on one line, in any order, and "quoted
words" that must occur together; case does not matter and punctuation
only separates words. Ranking is BM25 over the store's SQLite FTS5
index. --scope keeps the artifacts put under a session, trace, user or
tenant (repeat it to require several). --limit caps the hits (default
10). --json writes one {"id","place","snippet","score",
"stored_at","artifact"} object per line. Exit code 0 with hits, 1 with
none. Search first indexes the text that earlier commands stored and
left pending (mcpx transform does not wait for it), so it opens the
store for writing, or read-only where it may not write (then pending
text is not found). A query of more than
serve.artifact_tools.max_search_query_chars characters (1,000) or
max_search_terms words and phrases (32) is refused, and a search stops
after serve.artifact_tools.search_timeout (30s), as the gateway's
artifacts_search does.`,
	example: `
mcpx artifacts search 'Submit order'
mcpx artifacts search --scope session=3f2a9c --limit 3 '"Submit order" button'
mcpx artifacts search --json timeout | jq -r '"\(.id) \(.place)"'`,
}

// searchHit is one line of search --json.
type searchHit struct {
	ID       string             `json:"id"`
	Place    string             `json:"place"`
	Snippet  string             `json:"snippet"`
	Score    float64            `json:"score"`
	StoredAt time.Time          `json:"stored_at"`
	Artifact engine.ArtifactRef `json:"artifact"`
}

// runArtifactsSearch is "mcpx artifacts search".
func (p program) runArtifactsSearch(args []string, stdout, stderr io.Writer) int {
	c := searchCmd
	fs := newFlagSet(c)
	var (
		o      common
		asJSON bool
		scope  scopeFlag
		limit  int
	)
	o.register(fs, p.stores)
	fs.BoolVar(&asJSON, "json", false, "write one {\"id\",\"place\",\"snippet\",\"score\",\"stored_at\",\"artifact\"} JSON object per line")
	fs.Var(&scope, "scope", "search only the artifacts put under `FIELD=VALUE` (session=, trace=, user=, tenant=)")
	fs.IntVar(&limit, "limit", 10, "print at most `N` hits")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return usageError(stderr, c, errors.New("missing QUERY"))
	}
	if limit < 1 {
		return usageError(stderr, c, fmt.Errorf("--limit %d: want 1 or more", limit))
	}
	q := strings.Join(pos, " ")
	ctx := context.Background()
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	at := cfg.Serve.ArtifactTools.WithDefaults()
	if err := store.CheckSearchQuery(q, at.MaxSearchQueryChars, at.MaxSearchTerms); err != nil {
		return usageError(stderr, c, err)
	}
	// Opened for writing where it can be: a search first indexes the
	// text that transforms left pending (fsstore's indexer.go).
	st, err := o.openStore(ctx, cfg, log)
	if errors.Is(err, iofs.ErrPermission) {
		o.readOnly = true
		st, err = o.openStore(ctx, cfg, log)
	}
	if err != nil {
		return fail(stderr, c, err)
	}
	defer closeStore(ctx, st, log)
	sctx, cancel := context.WithTimeout(ctx, time.Duration(at.SearchTimeout))
	defer cancel()
	hits, err := st.Search(sctx, scope.Scope, q, limit)
	if errors.Is(err, store.ErrBadQuery) {
		return usageError(stderr, c, fmt.Errorf("QUERY %q has no words to search for", q))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fail(stderr, c, fmt.Errorf("the search stopped after %s (serve.artifact_tools.search_timeout): search with fewer or rarer words", time.Duration(at.SearchTimeout)))
	}
	if err != nil {
		return fail(stderr, c, err)
	}
	bw := bufio.NewWriterSize(stdout, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, h := range hits {
		if asJSON {
			err = enc.Encode(searchHit{ID: h.Ref.ID, Place: h.Place, Snippet: h.Snippet, Score: h.Score, StoredAt: h.Ref.Created.UTC(), Artifact: engine.RefFromStore(h.Ref)})
		} else {
			_, err = fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%s\n", h.Ref.ID, h.Place, h.Ref.Created.UTC().Format(time.RFC3339), cell(h.Ref.Source.Call()), strings.TrimSpace(h.Snippet))
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fail(stderr, c, err)
	}
	if len(hits) == 0 {
		fmt.Fprintf(stderr, "mcpx artifacts search: no line holds %s\n", q)
		return exitFail
	}
	return exitOK
}
