//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// One INSERT per line flushed FTS5 at every statement, 5 s for
// the 20,000 lines of a 1 MB JSON result. Rows now go in batches of
// indexRowsPerInsert: every line is found, at a batch's edges too, with
// its place, and indexing 20,000 lines takes well under a second.
func TestIndexPartsBatchesEveryLine(t *testing.T) {
	ctx := context.Background()
	s := openT(t, t.TempDir(), Config{})
	const lines = 20_000
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "row%d word\n", i)
	}
	ref, err := s.Put(ctx, strings.NewReader(b.String()), store.PutOptions{Namespace: "t", MIMEType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Annotate(ctx, ref.ID, nil, []store.TextPart{{Place: "line 1", Text: b.String()}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("indexed %d lines in %v", lines, time.Since(start))
	for _, n := range []int{1, indexRowsPerInsert, indexRowsPerInsert + 1, 2 * indexRowsPerInsert, lines - 1, lines} {
		hits, err := s.Search(ctx, store.Scope{}, fmt.Sprintf("row%d", n), 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Place != fmt.Sprintf("line %d", n) || hits[0].Ref.ID != ref.ID {
			t.Errorf("row%d: hits %+v, want line %d of %s", n, hits, n, ref.ID)
		}
	}
}
