package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
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
// error that says so.
func TestArtifactSearchDeadline(t *testing.T) {
	_, c, _, _ := snapshotGateway(t, config.ArtifactToolsOptions{SearchTimeout: store.Duration(100 * time.Millisecond), MaxSearchTerms: 100_000, MaxSearchQueryChars: 1 << 20})
	q, _ := json.Marshal(map[string]string{"query": strings.Repeat("ref item ", 1000)})
	start := time.Now()
	r := c.result("tools/call", toolCall("artifacts_search", string(q)))
	took := time.Since(start)
	want := "search stopped after 100ms: search with fewer or rarer words, or grep one artifact with artifacts_query"
	if !r.Get("isError").Bool() || r.Get("content.0.text").String() != want || took > 2*time.Second {
		t.Errorf("after %v: %.300s\nwant %s", took, r.Raw, want)
	}
}
