package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
)

// RunSearch checks a store.Searcher that is also a store.Annotator: scope,
// phrases, ranking, hostile query text, and that a deleted or collected
// artifact is no longer found. open returns a new, empty store.
func RunSearch(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, st store.Store)
	}{
		{"PhraseFindsLine", testSearchPhrase},
		{"Scope", testSearchScope},
		{"Ranking", testSearchRanking},
		{"HostileQuery", testSearchHostile},
		{"Deleted", testSearchDeleted},
		{"Places", testSearchPlaces},
		{"CallerLeaves", testSearchCallerLeaves},
		{"NewestFirst", testSearchNewestFirst},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			t.Cleanup(func() { st.Close(context.Background()) })
			if _, ok := st.(store.Searcher); !ok {
				t.Skip("not a store.Searcher")
			}
			tc.fn(t, st)
		})
	}
}

// annotated puts text under sc and indexes it as one part with place.
func annotated(t *testing.T, st store.Store, text, place string, sc store.Scope) store.Ref {
	t.Helper()
	ref := put(t, st, []byte(text), store.PutOptions{Namespace: "search", MIMEType: "text/plain", Scope: sc})
	a := st.(store.Annotator)
	if err := a.Annotate(context.Background(), ref.ID, nil, []store.TextPart{{Place: place, Text: text}}); err != nil {
		t.Fatalf("Annotate(%s): %v", ref.ID, err)
	}
	return ref
}

func search(t *testing.T, st store.Store, sc store.Scope, q string, limit int) []store.Hit {
	t.Helper()
	hits, err := st.(store.Searcher).Search(context.Background(), sc, q, limit)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return hits
}

// snapshot is an accessibility snapshot as @playwright/mcp writes it.
func snapshot(n int, button string, ref int) string {
	var b strings.Builder
	for i := range n {
		switch {
		case i == ref:
			fmt.Fprintf(&b, "  - button %q [ref=e%d]\n", button, i)
		case i%3 == 0:
			fmt.Fprintf(&b, "  - link \"Order history %d\" [ref=e%d]\n", i, i)
		default:
			fmt.Fprintf(&b, "  - button \"Submit %d\" [ref=e%d]\n", i, i)
		}
	}
	return b.String()
}

func testSearchPhrase(t *testing.T, st store.Store) {
	sc := store.Scope{SessionID: "s1"}
	ref := annotated(t, st, snapshot(500, "Submit order", 321), "", sc)
	hits := search(t, st, sc, `"Submit order"`, 5)
	if len(hits) != 1 {
		t.Fatalf("hits = %+v, want the one line", hits)
	}
	h := hits[0]
	if h.Ref.ID != ref.ID || h.Place != "line 322" || !strings.Contains(h.Snippet, "[ref=e321]") || h.Score <= 0 {
		t.Fatalf("hit = %+v, want %s line 322 with [ref=e321]", h, ref.ID)
	}
	// Unquoted, the words may come in any order; a line needs them all.
	if hits := search(t, st, sc, `order SUBMIT`, 50); len(hits) != 1 || hits[0].Place != "line 322" {
		t.Fatalf("words: %+v; want line 322 alone", hits)
	}
	if hits := search(t, st, sc, `order`, 500); len(hits) != 167 {
		t.Fatalf("order: %d hits, want 167", len(hits))
	}
}

func testSearchScope(t *testing.T, st store.Store) {
	mine := annotated(t, st, "alpha secret line\n", "", store.Scope{SessionID: "mine", UserID: "u1"})
	annotated(t, st, "alpha other line\n", "", store.Scope{SessionID: "theirs", UserID: "u2"})
	hits := search(t, st, store.Scope{SessionID: "mine"}, "alpha", 10)
	if len(hits) != 1 || hits[0].Ref.ID != mine.ID || hits[0].Ref.Scope.SessionID != "mine" {
		t.Fatalf("scoped hits = %+v, want only %s", hits, mine.ID)
	}
	if hits := search(t, st, store.Scope{UserID: "u3"}, "alpha", 10); len(hits) != 0 {
		t.Fatalf("another user's search found %+v", hits)
	}
	if hits := search(t, st, store.Scope{}, "alpha", 10); len(hits) != 2 {
		t.Fatalf("unscoped search found %d hits, want 2", len(hits))
	}
}

func testSearchRanking(t *testing.T, st store.Store) {
	sc := store.Scope{SessionID: "s"}
	annotated(t, st, "kiwi apple banana cherry date elder fig grape\n", "", sc)
	best := annotated(t, st, "kiwi kiwi kiwi\n", "", sc)
	hits := search(t, st, sc, "kiwi", 1)
	if len(hits) != 1 || hits[0].Ref.ID != best.ID {
		t.Fatalf("best hit = %+v, want %s (more of the word, shorter line)", hits, best.ID)
	}
}

// testSearchNewestFirst: among equal hits, the newest artifact comes
// first (a page's current snapshot before the last hour's, whose refs
// may be gone), and each hit says when its artifact was stored and by
// which call.
func testSearchNewestFirst(t *testing.T, st store.Store) {
	sc := store.Scope{UserID: "u"}
	var refs []store.Ref
	for i := range 60 {
		text := fmt.Sprintf("  - heading \"Snapshot %d\" [ref=e1]\n  - button \"Submit order\" [ref=e2]\n", i)
		ref := put(t, st, []byte(text), store.PutOptions{Namespace: "search", MIMEType: "text/plain", Scope: sc,
			Source: store.Source{Server: "playwright", Tool: "browser_snapshot", Layer: "sizenet"}})
		if err := st.(store.Annotator).Annotate(context.Background(), ref.ID, nil, []store.TextPart{{Text: text}}); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	hits := search(t, st, sc, `"Submit order"`, 10)
	if len(hits) != 10 {
		t.Fatalf("%d hits, want 10", len(hits))
	}
	for i, h := range hits {
		want := refs[len(refs)-1-i]
		if h.Ref.ID != want.ID || h.Score != hits[0].Score {
			var got []string
			for _, h := range hits {
				got = append(got, fmt.Sprintf("%s (%g)", h.Ref.ID, h.Score))
			}
			t.Fatalf("hit %d is %s, want the snapshots newest first (%s, %s, …), of equal score: %s", i, h.Ref.ID, refs[59].ID, refs[58].ID, strings.Join(got, ", "))
		}
		if !h.Ref.Created.Equal(want.Created) || h.Ref.Source.Server != "playwright" || h.Ref.Source.Tool != "browser_snapshot" {
			t.Fatalf("hit %d says it was stored at %v by %+v, want %v by playwright's browser_snapshot", i, h.Ref.Created, h.Ref.Source, want.Created)
		}
	}
}

func testSearchHostile(t *testing.T, st store.Store) {
	sc := store.Scope{SessionID: "s"}
	annotated(t, st, "a-b c:d e*f \"quoted\" NEAR(x y) OR AND NOT {col}\n", "", sc)
	for _, q := range []string{`"`, `-b`, `c:d`, `e*`, `NEAR(x`, `a OR`, `NOT`, `{col}:`, `"unclosed phrase`, `^x`, `x + y`, `'; DROP TABLE artifacts; --`} {
		if _, err := st.(store.Searcher).Search(context.Background(), sc, q, 5); err != nil && !errors.Is(err, store.ErrBadQuery) {
			t.Errorf("Search(%q): %v", q, err)
		}
	}
	if hits := search(t, st, sc, `c:d`, 5); len(hits) != 1 {
		t.Errorf(`Search("c:d") = %+v, want the line`, hits)
	}
	for _, q := range []string{"", "  ", `"-"`, "*"} {
		if _, err := st.(store.Searcher).Search(context.Background(), sc, q, 5); !errors.Is(err, store.ErrBadQuery) {
			t.Errorf("Search(%q) = %v, want ErrBadQuery", q, err)
		}
	}
}

func testSearchDeleted(t *testing.T, st store.Store) {
	ctx := context.Background()
	sc := store.Scope{SessionID: "gone"}
	ref := annotated(t, st, "zebra crossing\n", "", sc)
	if err := st.Delete(ctx, ref.ID); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, st, store.Scope{}, "zebra", 5); len(hits) != 0 {
		t.Fatalf("deleted artifact found: %+v", hits)
	}
	if err := st.(store.Annotator).Annotate(ctx, ref.ID, nil, []store.TextPart{{Text: "x"}}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Annotate(deleted) = %v, want ErrNotFound", err)
	}
	c, ok := st.(store.Collector)
	if !ok {
		return
	}
	annotated(t, st, "zebra again\n", "", sc)
	if _, err := c.DropScope(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, st, store.Scope{}, "zebra", 5); len(hits) != 0 {
		t.Fatalf("collected artifact found: %+v", hits)
	}
}

func testSearchPlaces(t *testing.T, st store.Store) {
	sc := store.Scope{SessionID: "p"}
	ref := put(t, st, []byte("pdf bytes"), store.PutOptions{Namespace: "search", Scope: sc})
	parts := []store.TextPart{
		{Place: "page 2", Text: "intro\n\nquarterly revenue grew"},
		{Place: "line 40", Text: "one\nrevenue two"},
		{Place: "entry docs/a.txt", Text: "revenue"},
	}
	if err := st.(store.Annotator).Annotate(context.Background(), ref.ID, nil, parts); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range search(t, st, sc, "revenue", 10) {
		got = append(got, h.Place)
	}
	want := map[string]bool{"page 2, line 3": true, "line 41": true, "entry docs/a.txt": true}
	if len(got) != 3 || !want[got[0]] || !want[got[1]] || !want[got[2]] {
		t.Fatalf("places = %q, want %v", got, want)
	}
}
