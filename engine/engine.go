package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/singleflight"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store"
)

// LayerError is a layer's failure: the step was skipped and the result
// flowed on as the previous step left it.
type LayerError struct {
	Step string
	Err  error
}

func (e *LayerError) Error() string { return fmt.Sprintf("layer[%s]: %v", e.Step, e.Err) }

// Unwrap returns the cause.
func (e *LayerError) Unwrap() error { return e.Err }

// Options configure an Engine. Store is required; the rest have defaults.
type Options struct {
	// Store receives the artifacts. Use noopstore for the fallback that keeps
	// nothing (docs/design.md, "The store's promises").
	Store store.Store
	// Config is the pipeline configuration; the zero value is the defaults.
	Config Config
	// Registry holds the layer kinds; defaults to DefaultRegistry().
	Registry *layer.Registry
	// Logger is the parent logger; layers log under "layer.<name>".
	// Defaults to a null logger.
	Logger hclog.Logger
	// Listener receives events; nil drops them.
	Listener Listener
	// Tracer observes each step of a call (a span per layer); nil, the
	// default, traces nothing and costs nothing.
	Tracer StepTracer
	// Linker makes download URLs for refs; nil leaves ArtifactRef.URL empty.
	Linker Linker
	// Reader reads upstream resources for layers that may (resourcelink).
	Reader ResourceReader
	// SchemaValidator checks a rewritten structuredContent against the
	// call's OutputSchema before the result leaves; nil skips the check
	// (values still keep the types the schema gives them).
	SchemaValidator SchemaValidator
	// Quota is passed with every put (store.PutOptions.Quota): under a
	// retention strategy of none, a put that would take its session or
	// trace past a limit is refused, and the value is truncated in the
	// result with a note (as one over MaxArtifactBytes is). Zero: none.
	Quota store.Quota
	// QueryTools names the tools default summaries point the model to
	// for more of an artifact; defaults to artifacts_query and
	// artifacts_search.
	QueryTools QueryTools
	// Memory is the process's memory budget: images decoded for a
	// client's view and files inspected for their summaries reserve what
	// they may hold from it before they allocate, so that concurrent
	// results cannot together exhaust the machine. Share one with every
	// other user of the process's memory (the gateway's queries). Nil:
	// the engine makes its own of membudget.Default().
	Memory *membudget.Budget
}

// Engine transforms tool results. It is safe for concurrent use.
type Engine struct {
	store    store.Store
	cfg      Config
	reg      *layer.Registry
	log      hclog.Logger
	listener Listener
	tracer   StepTracer
	linker   Linker
	reader   ResourceReader
	validate SchemaValidator
	quota    store.Quota
	tools    QueryTools
	mem      *membudget.Budget

	// mu guards chains only: a chain is built outside it, once per server
	// and tool (building), so a slow build (a WASM compile) holds up the
	// calls of its own server and tool and no others.
	mu       sync.Mutex
	chains   map[[2]string]*chain
	building singleflight.Group
	closed   atomic.Bool
}

// step is a built layer in a chain.
type step struct {
	name  string
	layer layer.Layer
	log   hclog.Logger
}

type chain struct {
	steps []step
	err   error
	// abandoned is set on a chain whose build failed because the context
	// of the call that built it ended: it is not kept, and a caller whose
	// context is still live builds again.
	abandoned bool
}

// layersPackage registers every built-in layer; errors about a layer that
// is not registered name it.
const layersPackage = "github.com/mcpx-dev/mcpx/layers"

// New validates o and returns an Engine. Layer options are validated when
// the first call of a server and tool builds its chain; Validate checks them
// up front.
func New(o Options) (*Engine, error) {
	if o.Store == nil {
		return nil, errors.New("engine: Options.Store is required (noopstore keeps nothing)")
	}
	e := &Engine{
		store:    o.Store,
		cfg:      o.Config.withDefaults(),
		reg:      o.Registry,
		log:      o.Logger,
		listener: o.Listener,
		tracer:   o.Tracer,
		linker:   o.Linker,
		quota:    o.Quota,
		reader:   o.Reader,
		validate: o.SchemaValidator,
		tools:    o.QueryTools,
		mem:      o.Memory,
		chains:   map[[2]string]*chain{},
	}
	if e.reg == nil {
		e.reg = layer.DefaultRegistry()
	}
	if e.mem == nil {
		e.mem = membudget.New(0)
	}
	if e.log == nil {
		e.log = hclog.NewNullLogger()
	}
	if len(e.cfg.Chain) == 0 {
		e.cfg.Chain = e.reg.Chain()
	}
	if len(e.cfg.Chain) == 0 {
		return nil, errors.New("engine: no chain: Config.Chain is empty and the registry has no default order (import package layers, or name the layers)")
	}
	for _, name := range e.cfg.Chain {
		if !e.reg.Known(name) {
			return nil, fmt.Errorf("engine: chain names unknown layer %q (registered: %v; import _ %q registers every built-in layer)", name, e.reg.Names(), layersPackage)
		}
	}
	if err := checkSchemaFallback(e.cfg.SchemaFallback); err != nil {
		return nil, err
	}
	for name := range e.cfg.Layers {
		if !e.reg.Known(name) {
			return nil, fmt.Errorf("engine: config names unknown layer %q (registered: %v; import _ %q registers every built-in layer)", name, e.reg.Names(), layersPackage)
		}
		if _, ok := e.reg.Lookup(name); !ok {
			e.log.Warn("layer configured but not registered: it does not run", "layer", name, "import", layersPackage)
		}
	}
	return e, nil
}

// Store returns the engine's store.
func (e *Engine) Store() store.Store { return e.store }

// Validate builds the chain of server and tool and reports bad options.
func (e *Engine) Validate(server, tool string) error {
	return e.chainFor(context.Background(), server, tool).err
}

// Warm builds the chain of server and tool and lets its layers start
// preparing in the background (see Warmer), then returns: a host that
// knows the call before its result is in hand (`mcpx transform` reading a
// large input, a gateway waiting for an upstream) overlaps that work with
// the wait. It returns the chain's error, as Validate does.
func (e *Engine) Warm(ctx context.Context, server, tool string) error {
	c := e.chainFor(ctx, server, tool)
	if c.err != nil {
		return c.err
	}
	for _, st := range c.steps {
		if w, ok := st.layer.(layer.Warmer); ok {
			w.Warm(ctx)
		}
	}
	return nil
}

// chainFor returns the chain of server and tool, building it on first use.
// Concurrent first calls share one build, made under the context of the
// call that started it; a caller stops waiting when its own context ends.
func (e *Engine) chainFor(ctx context.Context, server, tool string) *chain {
	key := [2]string{server, tool}
	for {
		e.mu.Lock()
		c, ok := e.chains[key]
		e.mu.Unlock()
		if ok {
			return c
		}
		wait := e.building.DoChan(server+"\x00"+tool, func() (any, error) {
			// A build that ended between the lookup above and this
			// flight has kept its chain: use it rather than build again.
			e.mu.Lock()
			c, ok := e.chains[key]
			e.mu.Unlock()
			if ok {
				return c, nil
			}
			return e.keep(key, e.buildChain(ctx, server, tool)), nil
		})
		select {
		case r := <-wait:
			c := r.Val.(*chain)
			if c.abandoned && ctx.Err() == nil {
				continue
			}
			return c
		case <-ctx.Done():
			return &chain{err: ctx.Err()}
		}
	}
}

// keep records a built chain for later calls, unless its build was
// abandoned or the engine closed meanwhile: then its layers are closed.
func (e *Engine) keep(key [2]string, c *chain) *chain {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.abandoned || e.closed.Load() {
		_ = closeSteps(context.Background(), c.steps)
		c.steps = nil
		if !c.abandoned {
			c.err = ErrClosed
		}
		return c
	}
	e.chains[key] = c
	return c
}

// buildChain builds the enabled layers of the chain for server and tool.
func (e *Engine) buildChain(ctx context.Context, server, tool string) *chain {
	c := &chain{}
	for _, name := range e.cfg.Chain {
		info, ok := e.reg.Lookup(name)
		if !ok {
			continue
		}
		opts, enabled, err := e.cfg.layerOptions(name, server, tool)
		if err != nil {
			c.err = err
			break
		}
		if !enabled {
			continue
		}
		log := e.log.Named("layer."+name).With("server", server, "tool", tool)
		l, err := info.New(opts, layer.Resources{Context: ctx, Log: log, Server: server, Tool: tool, Reader: e.reader})
		if err != nil {
			c.err = fmt.Errorf("layer[%s]: server %q tool %q: %w", name, server, tool, err)
			c.abandoned = ctx.Err() != nil
			break
		}
		c.steps = append(c.steps, step{name: name, layer: l, log: log})
	}
	return c
}

// closeSteps closes the layers that hold resources.
func closeSteps(ctx context.Context, steps []step) []error {
	var errs []error
	for _, st := range steps {
		if cl, ok := st.layer.(layer.Closer); ok {
			if err := cl.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("layer[%s]: close: %w", st.name, err))
			}
		}
	}
	return errs
}

// Result is a transformed tool result.
type Result struct {
	// Raw is the rewritten result JSON.
	Raw []byte
	// Artifacts lists what was stored, in order.
	Artifacts []ArtifactRef
	// Failures lists the layers and rewrites that failed; each was skipped
	// and the result flowed on, except a value the store failed to keep
	// (ErrStoreWrite), which the result holds as a preview and a
	// not_stored note. Match with errors.As(*LayerError) or
	// (*RewriteError).
	Failures []error
	// Clamped is set when the guardrail cut the observation.
	Clamped bool
	// KeptOutBytes and KeptOutTokens are what the result kept out of the
	// model's context (_meta[MetaKeptOutKey]'s bytes and tokens); zero
	// when it stored nothing or did not shrink.
	KeptOutBytes, KeptOutTokens int
}

// Transform runs the chain for c over raw. It returns an error only for
// input that cannot be transformed at all (not JSON: ErrBadJSON) or a
// done context; a layer that fails is skipped and reported in
// Result.Failures and as a layer_failed event. A result nested deeper than
// Config.MaxDepth is stored whole and replaced by a note that names it.
func (e *Engine) Transform(ctx context.Context, c Call, raw []byte) (*Result, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	d := layer.NewDocMaxDepth(c, raw, e.cfg.MaxDepth)
	if err := d.Err(); err != nil {
		if errors.Is(err, ErrTooDeep) {
			return e.tooDeep(ctx, c, raw, err)
		}
		return nil, err
	}
	ch := e.chainFor(ctx, c.Server, c.Tool)
	if ch.err != nil {
		return nil, ch.err
	}
	tokensIn := estimateTokensOf(raw)
	res := &Result{Raw: raw}
	var (
		stored []storedOriginal
		views  []blockRef
		capped int
		minted map[string]bool // made by the first artifact
	)
	for _, st := range ch.steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		sctx, span := ctx, StepSpan(nil)
		if e.tracer != nil {
			traced := c // c itself stays on the stack: a pointer to it would move it to the heap on every call
			sctx, span = e.tracer.StartStep(ctx, &traced, st.name)
		}
		var start time.Time // read only for the debug line: a clock read per step is not free
		if st.log.IsDebug() {
			start = time.Now()
		}
		rws, err := plan(sctx, st.layer, d)
		if err != nil {
			e.layerFailed(d, st, res, []error{&LayerError{Step: st.name, Err: err}})
			endStep(span, StepReport{Err: err})
			continue
		}
		if len(rws) == 0 {
			endStep(span, StepReport{})
			continue
		}
		lim := stepLimits{artifacts: e.cfg.MaxArtifactsPerResult - len(res.Artifacts), minted: minted}
		if _, ok := st.layer.(layer.Clamper); ok {
			lim.artifacts = -1
		} else if lim.artifacts < 0 {
			lim.artifacts = 0
		}
		out, err := e.safeExecute(sctx, d, st.name, rws, lim)
		if err != nil {
			e.layerFailed(d, st, res, []error{&LayerError{Step: st.name, Err: err}})
			endStep(span, StepReport{Rewrites: len(rws), Err: err})
			continue
		}
		e.layerFailed(d, st, res, out.errs)
		endStep(span, StepReport{Rewrites: len(rws), Artifacts: len(out.artifacts), Changed: out.changed, Failures: len(out.errs)})
		res.Artifacts = append(res.Artifacts, out.artifacts...)
		for _, a := range out.artifacts {
			if minted == nil {
				minted = map[string]bool{}
			}
			minted[a.ID] = true
		}
		stored = append(stored, out.stored...)
		views = append(views, out.views...)
		capped += out.capped
		if st.log.IsDebug() {
			st.log.Debug("step done", "rewrites", len(rws), "artifacts", len(out.artifacts), "bytes_in", len(d.Raw), "bytes_out", len(out.raw), "dur_ms", float64(time.Since(start).Microseconds())/1000)
		}
		if !out.changed {
			continue
		}
		if _, ok := st.layer.(layer.Clamper); ok {
			res.Clamped = true
			e.emit(Event{Type: EventObservationClamped, Server: c.Server, Tool: c.Tool, Scope: c.Scope, Layer: st.name, OriginalChars: len(d.Raw), ClampedChars: len(out.raw)})
			st.log.Warn("observation clamped", "original_chars", len(d.Raw), "clamped_chars", len(out.raw))
		}
		// A step may nest its output a little deeper than its input (a
		// ref in place of a value): later steps accept twice the limit.
		d = layer.NewDocMaxDepth(c, out.raw, 2*e.cfg.MaxDepth)
	}
	if capped > 0 {
		e.log.Warn("artifact cap reached; values past it stay inline", "server", c.Server, "tool", c.Tool, "max_artifacts_per_result", e.cfg.MaxArtifactsPerResult, "skipped", capped)
	}
	res.Raw = e.annotate(d, notes{stored: stored, views: views, capped: capped})
	if len(c.OutputSchema) > 0 && !sameBytes(res.Raw, raw) {
		res.Raw = e.keepSchema(ctx, c, raw, res)
	}
	res.Raw = e.addKeptOut(d, raw, tokensIn, res, views)
	return res, nil
}

// endStep ends a traced step's span; span is nil when nothing traces.
func endStep(span StepSpan, r StepReport) {
	if span != nil {
		span.End(r)
	}
}

// safeExecute runs a step's rewrites, turning a panic into an error: the
// step then applies nothing and the call goes on.
func (e *Engine) safeExecute(ctx context.Context, d *layer.Doc, step string, rws []layer.Rewrite, lim stepLimits) (out outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic executing rewrites: %v\n%s", r, debug.Stack())
		}
	}()
	return e.execute(ctx, d, step, rws, lim), nil
}

// plan runs a layer's Plan, turning a panic into an error.
func plan(ctx context.Context, l layer.Layer, d *layer.Doc) (rws []layer.Rewrite, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return l.Plan(ctx, d)
}

// maxFailuresLogged is how many failures of one step are logged, sent as
// events and listed in Result.Failures; the rest are counted in one more.
const maxFailuresLogged = 8

// layerFailed reports a step's failures: the first maxFailuresLogged each,
// the rest as one summary, so that a hostile answer cannot flood the log.
func (e *Engine) layerFailed(d *layer.Doc, st step, res *Result, errs []error) {
	if len(errs) > maxFailuresLogged {
		more := len(errs) - maxFailuresLogged
		errs = append(errs[:maxFailuresLogged:maxFailuresLogged], &LayerError{Step: st.name, Err: fmt.Errorf("%w: %d more failures of this step not listed", ErrFailuresElided, more)})
	}
	for _, err := range errs {
		res.Failures = append(res.Failures, err)
		st.log.Warn("layer failed; result flows on", "error", err)
		e.emit(Event{Type: EventLayerFailed, Server: d.Call.Server, Tool: d.Call.Tool, Scope: d.Call.Scope, Layer: st.name, Error: err.Error()})
	}
}

func (e *Engine) emit(ev Event) {
	if e.listener == nil {
		return
	}
	ev.Time = now()
	e.listener.OnEvent(ev)
}

// Close closes every built layer that holds resources. It does not close
// the store, which the caller owns. It is idempotent.
func (e *Engine) Close(ctx context.Context) error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, c := range e.chains {
		errs = append(errs, closeSteps(ctx, c.steps)...)
	}
	e.chains = map[[2]string]*chain{}
	return errors.Join(errs...)
}
