package upstream

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// TestSoleAtArrival: a server request is for the calls in flight when it
// arrived. Answered after another session's call has begun (its
// goroutine ran late), it is still the first session's, not ambiguous;
// without a record of its arrival, SoleAt is Sole now.
func TestSoleAtArrival(t *testing.T) {
	t.Parallel()
	cs := newCallers(config.Limits{}, hclog.NewNullLogger())
	a := &testCaller{session: "a"}
	endA := cs.enter(a)
	defer endA()
	ctx := cs.arrived(context.Background())
	endB := cs.enter(&testCaller{session: "b"})
	defer endB()
	if c, n := cs.SoleAt(ctx); c != Caller(a) || n != 1 {
		t.Errorf("SoleAt with the arrival recorded = %v, %d; want a's caller, 1", c, n)
	}
	if c, n := cs.SoleAt(context.Background()); c != nil || n != 2 {
		t.Errorf("SoleAt without it = %v, %d; want none, 2 (Sole now)", c, n)
	}
	other := newCallers(config.Limits{}, hclog.NewNullLogger())
	if c, n := other.SoleAt(ctx); c != nil || n != 0 {
		t.Errorf("another upstream's SoleAt = %v, %d; want its own Sole (none, 0)", c, n)
	}
}
