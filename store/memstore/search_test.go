package memstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) store.Store { return New(Config{}) })
}

// Searches at once over text no Search has read yet: the first to reach
// an artifact splits and tokenizes it, the others wait for it and see the
// same lines.
func TestSearchesAtOnceIndexOnce(t *testing.T) {
	ctx := context.Background()
	s := New(Config{})
	var text strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&text, "row%d word\n", i)
	}
	ref, err := s.Put(ctx, strings.NewReader(text.String()), store.PutOptions{MIMEType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Annotate(ctx, ref.ID, nil, []store.TextPart{{Place: "line 1", Text: text.String()}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 1; i <= 8; i++ {
		wg.Go(func() {
			q := fmt.Sprintf("row%d", i*250)
			hits, err := s.Search(ctx, store.Scope{}, q, 5)
			if err != nil || len(hits) != 1 || hits[0].Place != fmt.Sprintf("line %d", i*250) {
				t.Errorf("Search(%s) = %+v, %v", q, hits, err)
			}
		})
	}
	wg.Wait()
}
