package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/pdfcorpus"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// mcpx artifacts search finds the line of an indexed artifact, scoped,
// as a table and as JSON; no hit exits 1; a query of no words is a usage
// error.
func TestArtifactsSearch(t *testing.T) {
	isolate(t)
	snap := "- generic [ref=e1]:\n  - button \"Cancel\" [ref=e2]\n  - button \"Submit order\" [ref=e1234]\n"
	dir, ref := indexedStore(t, snap, store.PutOptions{Namespace: "playwright", MIMEType: "text/plain", Scope: store.Scope{SessionID: "s1"},
		Source: store.Source{Server: "playwright", Tool: "browser_snapshot"}})
	r := runCLI(t, nil, "artifacts", "search", "--store", dir, `"submit order"`)
	// Each hit says when its artifact was stored and by which call.
	stored := ref.Created.UTC().Format(time.RFC3339)
	if want := ref.ID + "\tline 3\t" + stored + "\tplaywright/browser_snapshot\t- button \"Submit order\" [ref=e1234]\n"; r.code != exitOK || r.stdout != want {
		t.Fatalf("search: exit %d, %q; want %q (stderr %s)", r.code, r.stdout, want, r.stderr)
	}
	j := runCLI(t, nil, "artifacts", "search", "--store", dir, "--scope", "session=s1", "--json", "--limit", "1", "Submit", "order")
	var h searchHit
	if err := json.Unmarshal([]byte(j.stdout), &h); err != nil || j.code != exitOK || h.ID != ref.ID || h.Place != "line 3" || h.Artifact.SHA256 != ref.SHA256 ||
		!h.StoredAt.Equal(ref.Created) || h.Artifact.Source.Tool != "browser_snapshot" {
		t.Fatalf("search --json: exit %d, %q, %v", j.code, j.stdout, err)
	}
	if r := runCLI(t, nil, "artifacts", "search", "--store", dir, "--scope", "session=other", "Submit"); r.code != exitFail || r.stdout != "" {
		t.Fatalf("another session: exit %d, %q", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "artifacts", "search", "--store", dir, `"*-:"`); r.code != exitUsage {
		t.Fatalf("no words: exit %d, %q", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "artifacts", "search", "--help"); r.code != exitOK || !strings.Contains(r.stdout, "mcpx artifacts search 'Submit order'") {
		t.Fatalf("--help: exit %d, %q", r.code, r.stdout)
	}
}

// A query past serve.artifact_tools' caps is a usage error naming the
// cap; a search past search_timeout stops there and says so.
func TestArtifactsSearchLimits(t *testing.T) {
	isolate(t)
	var text strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&text, "item ref row %d of the cart\n", i)
	}
	dir, _ := indexedStore(t, text.String(), store.PutOptions{Namespace: "t", MIMEType: "text/plain"})
	r := runCLI(t, nil, "artifacts", "search", "--store", dir, strings.Repeat("item ", 33))
	if want := "store: search query too long: it has 33 words and phrases, over the 32 a search takes; search with fewer, rarer words"; r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("33 words: exit %d, %q; want a usage error with %q", r.code, r.stderr, want)
	}
	// The search runs in a store that waits for the search's context to
	// end: only the timeout stops it, so the test is the same on a fast
	// machine and a loaded one.
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"store":{"s3":{"bucket":"stalled"}},"serve":{"artifact_tools":{"search_timeout":"50ms","max_search_terms":100000,"max_search_query_chars":1000000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var ahead atomic.Int64
	ahead.Store(-1)
	p := program{stores: store.DefaultBackends().With(store.Backend{Kind: "s3", Open: func(ctx context.Context, _ json.RawMessage, _ store.OpenOptions) (store.Store, error) {
		st, err := fsstore.Open(ctx, dir, fsstore.Config{})
		if err != nil {
			return nil, err
		}
		return stalledSearch{st, &ahead}, nil
	}})}
	var stderr bytes.Buffer
	code := p.run([]string{"artifacts", "search", "--config", cfg, strings.Repeat("item ref row ", 1000)}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	want := "mcpx artifacts search: the search stopped after 50ms (serve.artifact_tools.search_timeout): search with fewer or rarer words\n"
	if d := time.Duration(ahead.Load()); code != exitFail || stderr.String() != want || d <= 0 || d > 50*time.Millisecond {
		t.Errorf("3,000 words, 50ms: exit %d, %q, the search's deadline %v ahead when it began; want %q, at most 50ms ahead", code, stderr.String(), d, want)
	}
}

// stalledSearch is a store whose search waits until its context ends,
// then searches with that context; after stallLimit it gives up with
// errStalled instead. ahead is how far off the context's deadline was
// when the search began, in nanoseconds (-1: none).
type stalledSearch struct {
	artifactStore
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
	return s.artifactStore.Search(ctx, scope, query, limit)
}

// indexedStore is a new fs store holding text, put with o and indexed
// for search as one part, closed; it returns the store's folder and the
// artifact.
func indexedStore(t *testing.T, text string, o store.PutOptions) (string, store.Ref) {
	t.Helper()
	dir, st := openTestStore(t)
	ctx := context.Background()
	ref, err := st.Put(ctx, strings.NewReader(text), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Annotate(ctx, ref.ID, nil, []store.TextPart{{Text: text}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return dir, ref
}

// A PDF whose summary runs out of time (here at once: timeout_ms 1)
// reads only its first pages; its text for search is read whole later,
// within search_timeout_ms, and a search right after the transform finds
// the last page of the corpus's 100-page PDF.
func TestArtifactsSearchFindsLastPDFPage(t *testing.T) {
	isolate(t)
	const dir = "../../../../inspect/testdata/pdf"
	corpus, err := pdfcorpus.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(corpus, func(e pdfcorpus.Entry) bool { return e.File == "hundred.pdf" })
	if i < 0 {
		t.Fatal("no hundred.pdf in the corpus")
	}
	pages, err := pdfcorpus.Pages(dir, corpus[i])
	if err != nil || len(pages) != 100 {
		t.Fatalf("%d pages, %v", len(pages), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "hundred.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"pipeline": {"inspect": {"timeout_ms": 1, "search_timeout_ms": 600000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "artifacts")
	in, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "resource", "resource": map[string]string{
		"uri": "file:///hundred.pdf", "mimeType": "application/pdf", "blob": base64.StdEncoding.EncodeToString(data)}}}})
	tr := runCLI(t, bytes.NewReader(in), "transform", "--config", cfg, "--store", st, "--server", "corpus")
	id := strings.TrimPrefix(gjson.Get(tr.stdout, `content.#(type=="resource_link").uri`).String(), "mcpx://artifacts/")
	if tr.code != exitOK || id == "" {
		t.Fatalf("transform: exit %d, %.300s: %s", tr.code, tr.stdout, tr.stderr)
	}
	phrase := `"` + strings.Join(pdfcorpus.Words(strings.SplitN(strings.TrimSpace(pages[99]), "\n", 2)[0]), " ") + `"`
	s := runCLI(t, nil, "artifacts", "search", "--config", cfg, "--store", st, phrase)
	if at := id + "\tpage 100"; s.code != exitOK || !strings.Contains(s.stdout, at) {
		t.Fatalf("search %s: exit %d, %.300q (%s); want %s", phrase, s.code, s.stdout, s.stderr, at)
	}
}
