package query

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestFinderIndex checks finder.index against bytes.Index.
func TestFinderIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("abB .Z\nz")
	for range 20000 {
		h := make([]byte, r.IntN(40))
		for i := range h {
			h[i] = alphabet[r.IntN(len(alphabet))]
		}
		n := make([]byte, 1+r.IntN(4))
		for i := range n {
			n[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := newFinder(n, false).index(h), bytes.Index(h, n); got != want {
			t.Fatalf("index(%q, %q) = %d, want %d", h, n, got, want)
		}
		if got, want := newFinder(n, true).index(h), bytes.Index(bytes.ToLower(h), bytes.ToLower(n)); got != want {
			t.Fatalf("fold index(%q, %q) = %d, want %d", h, n, got, want)
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
	if _, lit, must, fold, _ := compileGrep(`(?i)error \d+`); lit != nil || !strings.EqualFold(string(must), "error ") || !fold {
		t.Errorf("(?i)error: %q %q %v", lit, must, fold)
	}
	// k and s also fold to non-ASCII letters: the prefilter is a piece
	// without them.
	if _, _, must, _, _ := compileGrep(`(?i)disk`); must != nil {
		t.Errorf("(?i)disk: prefilter %q", must)
	}
	if _, _, must, _, _ := compileGrep(`(?i)error request`); !strings.EqualFold(string(must), "error reque") {
		t.Errorf("(?i)error request: prefilter %q", must)
	}
	kelvin := put(t, st, "text/plain", []byte("a DI\u017fK b\nx\nerror reque\u017ft\n"))
	a, err = Run(context.Background(), st, kelvin, Request{Grep: `(?i)disk|error request`}, Budget{})
	if err != nil || a.Total != 2 {
		t.Errorf("long s: %+v %v", a, err)
	}
	a, err = Run(context.Background(), st, kelvin, Request{Grep: `(?i)error request`}, Budget{})
	if err != nil || a.Text != "3:error reque\u017ft" {
		t.Errorf("long s with a prefilter: %+v %v", a, err)
	}
	ref = put(t, st, "text/plain", []byte("an Error here\nno\nERROR 2\nerr or\n"))
	a, err = Run(context.Background(), st, ref, Request{Grep: `(?i)error`}, Budget{})
	if err != nil || a.Text != "1:an Error here\n3:ERROR 2" || a.Total != 2 {
		t.Errorf("(?i)error: %+v %v", a, err)
	}
}
