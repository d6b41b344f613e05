package query

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A Budget without a jq runner refuses the mode and says where it runs.
// The mode's own tests are query/jq's: they run Run with its runner.
func TestJQModeNeedsARunner(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"a":1}`))
	_, err := Run(context.Background(), st, js, Request{JQ: ".a"}, Budget{})
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "Budget.JQ") {
		t.Fatalf("jq without a runner: %v", err)
	}
}
