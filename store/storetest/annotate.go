package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
)

// testAnnotate: a store that is an Annotator returns the recorded content
// in the refs of Stat, Get, List and a later Put of the same bytes;
// annotating again replaces it, nil clears it, and a missing id is
// ErrNotFound. Stores that are not Annotators skip it.
func testAnnotate(t *testing.T, st store.Store) {
	an, ok := st.(store.Annotator)
	if !ok {
		t.Skip("not an Annotator")
	}
	ctx := context.Background()
	data := []byte("line one\nline two\n")
	ref := put(t, st, data, store.PutOptions{Namespace: "ann", MIMEType: "text/plain"})
	if len(ref.Content) != 0 {
		t.Errorf("new artifact has content %s", ref.Content)
	}
	content := json.RawMessage(`{"kind":"text","lines":2}`)
	parts := []store.TextPart{{Place: "line 1", Text: "line one\nline two\n"}}
	if err := an.Annotate(ctx, ref.ID, content, parts); err != nil {
		t.Fatalf("Annotate: %v", err)
	}
	check := func(what string, got store.Ref, want json.RawMessage) {
		t.Helper()
		if !bytes.Equal(got.Content, want) {
			t.Errorf("%s: content %s, want %s", what, got.Content, want)
		}
	}
	got, err := st.Stat(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("Stat", got, content)
	_, got = ReadAll(t, st, ref.ID, nil)
	check("Get", got, content)
	refs, _ := ListAll(t, st, store.Scope{})
	for _, r := range refs {
		if r.ID == ref.ID {
			check("List", r, content)
		}
	}
	again := put(t, st, data, store.PutOptions{Namespace: "ann", MIMEType: "text/plain"})
	check("Put again", again, content)

	replaced := json.RawMessage(`{"kind":"text","lines":3}`)
	if err := an.Annotate(ctx, ref.ID, replaced, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Stat(ctx, ref.ID)
	check("Stat after a second Annotate", got, replaced)
	if err := an.Annotate(ctx, ref.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Stat(ctx, ref.ID)
	check("Stat after clearing", got, nil)

	if err := an.Annotate(ctx, "ann_0000000000000000", content, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Annotate(missing) = %v, want ErrNotFound", err)
	}
	if err := an.Annotate(ctx, ref.ID, json.RawMessage(`{"kind":`), nil); err == nil {
		t.Errorf("Annotate(invalid JSON) succeeded")
	}
}
