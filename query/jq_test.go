package query

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/query/jq"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// runWithJQ is Run with query/jq's compiler, as mcpx-server and the
// gateway run it.
func runWithJQ(ctx context.Context, st store.Store, ref store.Ref, req Request, b Budget) (Answer, error) {
	if b.JQ == nil {
		b.JQ = jq.Compile
	}
	return Run(ctx, st, ref, req, b)
}

// A Budget without a jq compiler refuses the mode and says where it runs.
func TestJQModeNeedsACompiler(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"a":1}`))
	_, err := Run(context.Background(), st, js, Request{JQ: ".a"}, Budget{})
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "mcpx-server") {
		t.Fatalf("jq without a compiler: %v", err)
	}
}
