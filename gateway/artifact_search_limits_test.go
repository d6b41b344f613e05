package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// A search query past max_search_query_chars or max_search_terms is a
// tool error that says which cap and what to do, before the store is
// asked (a 150,000-word query ran 60 s at 482 MB).
func TestArtifactSearchQueryCaps(t *testing.T) {
	t.Parallel()
	_, c, _, _ := snapshotGateway(t, config.ArtifactToolsOptions{})
	for _, tc := range []struct{ query, want string }{
		{strings.Repeat("ref ", 33), "store: search query too long: it has 33 words and phrases, over the 32 a search takes; search with fewer, rarer words"},
		{strings.Repeat("x", 1001), "store: search query too long: it has 1001 characters, over the 1000 a search takes; search with fewer, rarer words"},
	} {
		q, _ := json.Marshal(map[string]string{"query": tc.query})
		r := c.result("tools/call", toolCall("artifacts_search", string(q)))
		if !r.Get("isError").Bool() || r.Get("content.0.text").String() != tc.want {
			t.Errorf("%.20q: %.300s\nwant %s", tc.query, r.Raw, tc.want)
		}
	}
}

// A search that runs past the tool's timeout stops there, with a tool
// error that says so. The store's search waits for its context to end:
// only the timeout stops it, so the test is the same on a fast machine
// and a loaded one.
func TestArtifactSearchDeadline(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64
	ahead.Store(-1)
	_, c, _, _ := snapshotGatewayOn(t, config.ArtifactToolsOptions{SearchTimeout: store.Duration(100 * time.Millisecond), MaxSearchTerms: 100_000, MaxSearchQueryChars: 1 << 20},
		func(st *fsstore.Store) store.Store { return stalledSearch{st, &ahead} })
	q, _ := json.Marshal(map[string]string{"query": strings.Repeat("ref item ", 1000)})
	r := c.result("tools/call", toolCall("artifacts_search", string(q)))
	want := "search stopped after 100ms: search with fewer or rarer words, or grep one artifact with artifacts_query"
	if d := time.Duration(ahead.Load()); !r.Get("isError").Bool() || r.Get("content.0.text").String() != want || d <= 0 || d > 100*time.Millisecond {
		t.Errorf("the search's deadline %v ahead when it began: %.300s\nwant %s, at most 100ms ahead", d, r.Raw, want)
	}
}

// stalledSearch is a store whose search waits until its context ends,
// then searches with that context; after stallLimit it gives up with
// errStalled instead. ahead is how far off the context's deadline was
// when the search began, in nanoseconds (-1: none).
type stalledSearch struct {
	*fsstore.Store
	ahead *atomic.Int64
}

// stallLimit ends a stalled search that no deadline ended: the test
// fails on errStalled rather than hanging on the real search.
const stallLimit = 10 * time.Second

var errStalled = errors.New("no deadline ended the search")

func (s stalledSearch) Search(ctx context.Context, scope store.Scope, query string, limit int) ([]store.Hit, error) {
	if d, ok := ctx.Deadline(); ok {
		s.ahead.Store(int64(time.Until(d)))
	}
	select {
	case <-ctx.Done():
	case <-time.After(stallLimit):
		return nil, errStalled
	}
	return s.Store.Search(ctx, scope, query, limit)
}
