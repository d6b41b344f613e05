package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// testSearchCallerLeaves: a search whose caller leaves stops at once with
// the context's error, instead of burning a CPU until it is done (a
// 100,000-word search ran minutes after its client left). The search is
// one that takes seconds: 400 words that every one of 10,000 lines holds.
func testSearchCallerLeaves(t *testing.T, st store.Store) {
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	var text strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&text, "%s r%d\n", strings.Join(words, " "), i)
	}
	sc := store.Scope{SessionID: "s"}
	annotated(t, st, text.String(), "line 1", sc)
	search(t, st, sc, "r9999", 1) // indexed before the clock starts
	q := strings.Repeat(strings.Join(words, " ")+" ", 10)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	hits, err := st.(store.Searcher).Search(ctx, sc, q, 5)
	if took := time.Since(start); !errors.Is(err, context.Canceled) || took > time.Second {
		t.Fatalf("caller left after 50ms: %d hits, %v after %v; want context.Canceled at once", len(hits), err, took)
	}
}
