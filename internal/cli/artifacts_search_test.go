package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
)

// mcpx artifacts search finds the line of an indexed artifact, scoped,
// as a table and as JSON; no hit exits 1; a query of no words is a usage
// error.
func TestArtifactsSearch(t *testing.T) {
	isolate(t)
	dir, st := openTestStore(t)
	ctx := context.Background()
	snap := "- generic [ref=e1]:\n  - button \"Cancel\" [ref=e2]\n  - button \"Submit order\" [ref=e1234]\n"
	ref, err := st.Put(ctx, strings.NewReader(snap), store.PutOptions{Namespace: "playwright", MIMEType: "text/plain", Scope: store.Scope{SessionID: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Annotate(ctx, ref.ID, nil, []store.TextPart{{Text: snap}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "artifacts", "search", "--store", dir, `"submit order"`)
	if want := ref.ID + "\tline 3\t- button \"Submit order\" [ref=e1234]\n"; r.code != exitOK || r.stdout != want {
		t.Fatalf("search: exit %d, %q; want %q (stderr %s)", r.code, r.stdout, want, r.stderr)
	}
	j := runCLI(t, nil, "artifacts", "search", "--store", dir, "--scope", "session=s1", "--json", "--limit", "1", "Submit", "order")
	var h searchHit
	if err := json.Unmarshal([]byte(j.stdout), &h); err != nil || j.code != exitOK || h.ID != ref.ID || h.Place != "line 3" || h.Artifact.SHA256 != ref.SHA256 {
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
