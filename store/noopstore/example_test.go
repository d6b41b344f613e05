package noopstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/noopstore"
)

func Example() {
	ctx := context.Background()
	st := noopstore.New(hclog.NewNullLogger())
	ref, _ := st.Put(ctx, strings.NewReader("a large base64 blob"), store.PutOptions{Namespace: "github"})
	_, _, err := st.Get(ctx, ref.ID, nil)
	fmt.Println(ref.ID, ref.Truncated, errors.Is(err, store.ErrNotStored))
	// Output: truncated_0cc49aa00eda true true
}
