package query

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestFinderIndex checks finder.index against bytes.Index.
func TestFinderIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab .Z\n")
	for range 20000 {
		h := make([]byte, r.IntN(40))
		for i := range h {
			h[i] = alphabet[r.IntN(len(alphabet))]
		}
		n := make([]byte, 1+r.IntN(4))
		for i := range n {
			n[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := newFinder(n).index(h), bytes.Index(h, n); got != want {
			t.Fatalf("index(%q, %q) = %d, want %d", h, n, got, want)
		}
	}
}

// TestGrepRequiredLiteral: a regexp run only on the lines holding its
// literal finds the same lines as one run on every line.
func TestGrepRequiredLiteral(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ref := put(t, st, "text/plain", []byte("x 12 ms from a\nms from b\n7 ms from c 9 ms from d\nno\n3 ms from"))
	a, err := Run(context.Background(), st, ref, Request{Grep: `\d+ ms from`}, Budget{})
	if err != nil || a.Text != "1:x 12 ms from a\n3:7 ms from c 9 ms from d\n5:3 ms from" || a.Total != 3 {
		t.Errorf("%+v %v", a, err)
	}
	if _, lit, must, _ := compileGrep(`(?i)error \d+`); lit != nil || must != nil {
		t.Errorf("case-folded literal used as a prefilter: %q %q", lit, must)
	}
}
