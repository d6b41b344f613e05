package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

type ctxKey struct{}

// slowBuild registers a layer whose construction for server "slow" blocks
// until release is closed (or its build context ends), as a WASM compile
// does, and counts the builds per server.
type slowBuild struct {
	release chan struct{}
	started chan struct{}
	// ended receives the error of each build of server "slow".
	ended  chan error
	mu     sync.Mutex
	builds map[string]int
	sawCtx atomic.Bool
}

func newSlowEngine(t *testing.T) (*engine.Engine, *slowBuild) {
	t.Helper()
	sb := &slowBuild{release: make(chan struct{}), started: make(chan struct{}, 16), ended: make(chan error, 16), builds: map[string]int{}}
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "slow", New: func(_ json.RawMessage, r layer.Resources) (layer.Layer, error) {
		sb.mu.Lock()
		sb.builds[r.Server]++
		sb.mu.Unlock()
		if r.Context != nil && r.Context.Value(ctxKey{}) == "caller" {
			sb.sawCtx.Store(true)
		}
		if r.Server == "slow" {
			sb.started <- struct{}{}
			select {
			case <-sb.release:
				sb.ended <- nil
			case <-r.Context.Done():
				sb.ended <- r.Context.Err()
				return nil, r.Context.Err()
			}
		}
		return fixed(nil), nil
	}})
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{Chain: []string{"slow"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	return eng, sb
}

func (sb *slowBuild) count(server string) int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.builds[server]
}

// A chain being built for one server holds up no other server's calls, and
// concurrent first calls of one server and tool share one build.
func TestChainBuildIsPerServerAndOnce(t *testing.T) {
	t.Parallel()
	eng, sb := newSlowEngine(t)
	call := engine.Call{Server: "slow", Tool: "t"}
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := eng.Transform(ctx, call, []byte(`{"a":1}`))
			errs <- err
		}()
	}
	<-sb.started
	// The slow build is under way: another server's call completes.
	if _, err := eng.Transform(context.Background(), engine.Call{Server: "fast", Tool: "t"}, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	close(sb.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := sb.count("slow"); n != 1 {
		t.Fatalf("slow chain built %d times, want 1", n)
	}
	if !sb.sawCtx.Load() {
		t.Fatal("layer construction did not get the caller's context")
	}
}

// A caller whose context ends stops waiting for a build; an abandoned build
// is not kept, and the next call builds again.
func TestChainBuildAbandonedIsRetried(t *testing.T) {
	t.Parallel()
	eng, sb := newSlowEngine(t)
	call := engine.Call{Server: "slow", Tool: "t"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := eng.Transform(ctx, call, []byte(`{"a":1}`))
		done <- err
	}()
	<-sb.started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled caller kept waiting for the build")
	}
	if err := <-sb.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("build ended with %v, want context.Canceled", err)
	}
	close(sb.release)
	if _, err := eng.Transform(context.Background(), call, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if n := sb.count("slow"); n != 2 {
		t.Fatalf("slow chain built %d times, want 2 (the abandoned build is not kept)", n)
	}
}

// warmLayer counts Warm calls and the chains built.
type warmLayer struct{ warms *atomic.Int32 }

func (warmLayer) Plan(context.Context, *layer.Doc) ([]layer.Rewrite, error) { return nil, nil }
func (w warmLayer) Warm(context.Context)                                    { w.warms.Add(1) }

// Warm builds the chain once (a later Transform reuses it), calls every
// Warmer of it, and reports the chain's error as Validate does.
func TestWarm(t *testing.T) {
	t.Parallel()
	var warms, builds atomic.Int32
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "warm", New: func(opts json.RawMessage, r layer.Resources) (layer.Layer, error) {
		builds.Add(1)
		if string(opts) == `{"bad":true}` && r.Server == "broken" {
			return nil, errors.New("bad options")
		}
		return warmLayer{&warms}, nil
	}})
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{
		Chain:   []string{"warm"},
		Servers: map[string]engine.ServerConfig{"broken": {Layers: map[string]json.RawMessage{"warm": json.RawMessage(`{"bad":true}`)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	ctx := context.Background()
	if err := eng.Warm(ctx, "s", "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Transform(ctx, engine.Call{Server: "s", Tool: "t"}, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if warms.Load() != 1 || builds.Load() != 1 {
		t.Errorf("after Warm and Transform: %d warms, %d builds; want 1 and 1", warms.Load(), builds.Load())
	}
	if err := eng.Warm(ctx, "broken", "t"); err == nil || !strings.Contains(err.Error(), "bad options") {
		t.Errorf("Warm of a chain with bad options: %v", err)
	}
}
