package memstore_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func Example() {
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	defer st.Close(ctx)

	ref, err := st.Put(ctx, strings.NewReader("%PDF-1.7 ..."), store.PutOptions{
		Namespace: "tableau", MIMEType: "application/pdf", Filename: "sales.pdf",
		Scope: store.Scope{SessionID: "s1"},
	})
	if err != nil {
		panic(err)
	}
	rc, _, err := st.Get(ctx, ref.ID, &store.Range{Offset: 0, Length: 8})
	if err != nil {
		panic(err)
	}
	head, _ := io.ReadAll(rc)
	rc.Close()
	refs, _, _ := st.List(ctx, store.Scope{SessionID: "s1"}, "")
	fmt.Println(ref.ID, ref.SizeBytes, string(head), len(refs))
	// Output: tableau_cd98c5bce101 12 %PDF-1.7 1
}
