//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mcpx-example-")
	defer os.RemoveAll(dir)

	st, err := fsstore.Open(ctx, dir, fsstore.Config{})
	if err != nil {
		panic(err)
	}
	ref, err := st.Put(ctx, strings.NewReader("hello, artifact"), store.PutOptions{Namespace: "example"})
	if err != nil {
		panic(err)
	}
	st.Close(ctx)

	// The artifact survives a restart.
	st, err = fsstore.Open(ctx, dir, fsstore.Config{})
	if err != nil {
		panic(err)
	}
	defer st.Close(ctx)
	rc, _, err := st.Get(ctx, ref.ID, &store.Range{Offset: 7, Length: -1})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	fmt.Println(ref.ID, string(b))
	// Output: example_b4577ba15310 artifact
}
