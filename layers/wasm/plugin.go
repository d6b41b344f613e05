package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/wasmmem"
)

// The ABI v1 names (sdk/wasm-guest/ABI.md).
const (
	exportMarker    = "plugin_abi_v1"
	exportAlloc     = "plugin_alloc"
	exportFree      = "plugin_free"
	exportTransform = "plugin_transform"
	exportMemory    = "memory"
	hostModule      = "host"
	wasiModule      = wasi_snapshot_preview1.ModuleName
)

// Return codes of host.get_value and host.get_config.
const (
	codeMissing   = -1 // no such value
	codeOverLimit = -2 // over the get_value budget of the call
	codeBadMemory = -3 // the buffer or the path lies outside guest memory
	codeBadPath   = -4 // not a plain path (valuepath.go): gjson modifiers, queries, ...
	codeDeadline  = -5 // the call's deadline passed
)

// Bounds of host.log.
const (
	maxLogLine  = 4096
	maxLogLines = 64 // per call; more are counted and dropped
	stderrTail  = 1024
)

// errFlag marks a response length as an error message.
const errFlag = 1 << 31

// Plugin is one compiled module with a pool of instances. It is an
// layer.Layer (in ModeRewrites) and is safe for concurrent use: each call
// runs on an instance of its own. An instance keeps its memory from call to
// call (a guest may keep the last request), so a pooled instance serves
// only calls of the principal it first served: the same server, tenant and
// user (principal.go). Close retires it: calls in flight finish, then its
// runtime is closed.
type Plugin struct {
	name   string
	sha    string
	cfg    SandboxConfig
	config json.RawMessage
	log    hclog.Logger
	rt     wazero.Runtime
	mod    wazero.CompiledModule
	pool   instancePool

	shareKey *sharedPluginKey // set for plugins the host shares among layers

	mu       sync.Mutex
	inflight int
	retired  bool
	done     bool
}

// instance is one instantiated module and its exports.
type instance struct {
	mod                    api.Module
	mem                    api.Memory
	alloc, free, transform api.Function
	stderr                 *tailBuffer
	stack                  [2]uint64
	// owner is the principal whose calls the instance served; a fresh
	// instance has none yet.
	owner principal
	owned bool
	// in is the request buffer the guest allocated, kept from call to call
	// (a guest export call costs microseconds; the Go runtime's entry more):
	// plugin_alloc runs again only for a larger request, plugin_free on the
	// old buffer then.
	in, inCap uint32
}

// callState is what host functions see of the call in progress.
type callState struct {
	log    hclog.Logger // the caller's logger (WithLogger); nil: the plugin's own
	doc    *layer.Doc
	budget int
	logs   int
}

type callKey struct{}

func newPlugin(ctx context.Context, h *Host, name string, bin []byte, cfg SandboxConfig, config json.RawMessage) (*Plugin, error) {
	cfg = cfg.withDefaults()
	p := &Plugin{
		name:   name,
		sha:    digest(bin),
		cfg:    cfg,
		config: config,
		log:    h.log.Named(name),
		pool:   instancePool{max: cfg.PoolSize},
	}
	if len(bytes.TrimSpace(p.config)) == 0 {
		p.config = json.RawMessage("{}")
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(h.cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(cfg.MemoryLimitPages)
	p.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	fail := func(err error) (*Plugin, error) {
		_ = p.rt.Close(ctx) // don't leak the runtime on error
		return nil, &PluginError{Plugin: name, Err: err}
	}
	mod, err := p.rt.CompileModule(ctx, bin)
	if err != nil {
		return fail(fmt.Errorf("%w: compile: %w", ErrBadModule, err))
	}
	p.mod = mod
	if err := checkModule(mod); err != nil {
		return fail(err)
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, p.rt); err != nil {
		return fail(fmt.Errorf("wasi: %w", err))
	}
	if err := p.instantiateHost(ctx); err != nil {
		return fail(fmt.Errorf("host module: %w", err))
	}
	// One instance up front: it runs the guest's initialization now, so a
	// guest that traps in init fails to load rather than on a call.
	ictx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	// The guest's initialization logs under a call's line cap too.
	ictx = context.WithValue(ictx, callKey{}, &callState{})
	inst, err := p.instantiate(ictx)
	cancel()
	if err != nil {
		return fail(err)
	}
	p.pool.put(inst)
	p.log.Debug("plugin compiled", "sha256", p.sha, "bytes", len(bin))
	return p, nil
}

// rebuildHint tells the author of a module built as a command how to build
// a plugin instead.
const rebuildHint = "built as a command (exports _start, not _initialize); rebuild with -buildmode=c-shared " +
	"(Go: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; TinyGo: tinygo build -target=wasip1 -buildmode=c-shared)"

// checkModule reports a module that is not ABI v1: a missing or mistyped
// export, or an import the host does not provide.
func checkModule(m wazero.CompiledModule) error {
	want := map[string]struct{ params, results []api.ValueType }{
		exportAlloc:     {[]api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
		exportFree:      {[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil},
		exportTransform: {[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}},
	}
	fns := m.ExportedFunctions()
	// A Go or TinyGo guest built as a command (without -buildmode=c-shared)
	// exports _start and no _initialize: its runtime is never set up, and
	// the first plugin_alloc traps with "call _start first". Say the fix.
	_, hasStart := fns["_start"]
	_, hasInit := fns["_initialize"]
	if hasStart && !hasInit {
		return fmt.Errorf("%w: %s", ErrBadModule, rebuildHint)
	}
	if _, ok := fns[exportMarker]; !ok {
		return fmt.Errorf("%w: missing export %q (is it built with an mcpx guest SDK?)", ErrBadModule, exportMarker)
	}
	for _, n := range []string{exportAlloc, exportFree, exportTransform} {
		def, ok := fns[n]
		if !ok {
			return fmt.Errorf("%w: missing export %q", ErrBadModule, n)
		}
		w := want[n]
		if !sameTypes(def.ParamTypes(), w.params) || !sameTypes(def.ResultTypes(), w.results) {
			return fmt.Errorf("%w: export %q has type %v -> %v, want %v -> %v", ErrBadModule, n,
				typeNames(def.ParamTypes()), typeNames(def.ResultTypes()), typeNames(w.params), typeNames(w.results))
		}
	}
	if _, ok := m.ExportedMemories()[exportMemory]; !ok {
		return fmt.Errorf("%w: missing export %q", ErrBadModule, exportMemory)
	}
	for _, def := range m.ImportedFunctions() {
		mod, name, _ := def.Import()
		if mod == hostModule || mod == wasiModule {
			continue
		}
		return fmt.Errorf("%w: imports %s.%s, which the host does not provide (only %q and %q)", ErrBadModule, mod, name, hostModule, wasiModule)
	}
	for _, def := range m.ImportedMemories() {
		mod, name, _ := def.Import()
		return fmt.Errorf("%w: imports memory %s.%s (the guest must export its own)", ErrBadModule, mod, name)
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func typeNames(ts []api.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return "(" + strings.Join(names, ",") + ")"
}

// instantiateHost provides the "host" import module.
func (p *Plugin) instantiateHost(ctx context.Context) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := p.rt.NewHostModuleBuilder(hostModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostLog), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").Export("log").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostGetConfig), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("key_ptr", "key_len", "buf_ptr", "buf_cap").Export("get_config").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostGetValue), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("path_ptr", "path_len", "buf_ptr", "buf_cap").Export("get_value").
		Instantiate(ctx)
	return err
}

// hostLog is host.log(level, ptr, len): one line into the plugin's logger.
func (p *Plugin) hostLog(ctx context.Context, m api.Module, stack []uint64) {
	level, ptr, n := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
	cs, _ := ctx.Value(callKey{}).(*callState)
	if cs == nil {
		// Every entry into a guest carries a callState; a host call without
		// one has no line budget to count against, so it logs nothing.
		return
	}
	log := p.log
	if cs.log != nil {
		log = cs.log.Named(p.name)
	}
	cs.logs++
	if cs.logs > maxLogLines {
		if cs.logs == maxLogLines+1 {
			log.Warn("guest log lines over the limit of one call; dropping the rest", "limit", maxLogLines)
		}
		return
	}
	cut := n > maxLogLine
	if cut {
		n = maxLogLine
	}
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		log.Warn("guest log: buffer outside memory", "ptr", ptr, "len", n)
		return
	}
	msg := escapeLogLine(string(b))
	if cut {
		msg += "…"
	}
	switch {
	case level <= 0:
		log.Trace(msg)
	case level == 1:
		log.Debug(msg)
	case level == 2:
		log.Info(msg)
	case level == 3:
		log.Warn(msg)
	default:
		log.Error(msg)
	}
}

// hostGetConfig is host.get_config(key, buf) -> len | code: the JSON of a
// plain path (valuepath.go) in the plugin's config ("" for all of it).
func (p *Plugin) hostGetConfig(ctx context.Context, m api.Module, stack []uint64) {
	key, ok := readPath(m, uint32(stack[0]), uint32(stack[1]))
	if !ok {
		stack[0] = api.EncodeI64(codeBadMemory)
		return
	}
	stack[0] = api.EncodeI64(lookupInto(ctx, m, p.config, key, uint32(stack[2]), uint32(stack[3]), nil))
}

// hostGetValue is host.get_value(path, buf) -> len | code: the full JSON of
// a value of the call's payload (first carrier), or of the whole result
// with a "result:" prefix, within the call's budget. The path is a plain
// path (valuepath.go).
func (p *Plugin) hostGetValue(ctx context.Context, m api.Module, stack []uint64) {
	cs, _ := ctx.Value(callKey{}).(*callState)
	path, ok := readPath(m, uint32(stack[0]), uint32(stack[1]))
	if !ok {
		stack[0] = api.EncodeI64(codeBadMemory)
		return
	}
	if cs == nil || cs.doc == nil {
		stack[0] = api.EncodeI64(codeMissing)
		return
	}
	src := cs.doc.Raw
	if rest, isResult := strings.CutPrefix(path, "result:"); isResult {
		path = rest
	} else if cs := cs.doc.Carriers(); len(cs) > 0 {
		src = cs[0].Payload
	}
	stack[0] = api.EncodeI64(lookupInto(ctx, m, src, path, uint32(stack[2]), uint32(stack[3]), &cs.budget))
}

// readPath reads a path argument; a path over maxPathBytes reads as one
// byte too many, which parsePlainPath rejects without the guest's bytes
// being copied.
func readPath(m api.Module, ptr, n uint32) (string, bool) {
	if n > maxPathBytes {
		if _, ok := m.Memory().Read(ptr, n); !ok {
			return "", false
		}
		return strings.Repeat(".", maxPathBytes+1), true
	}
	b, ok := m.Memory().Read(ptr, n)
	return string(b), ok
}

// lookupInto finds path in doc and writes the value to the guest's buffer.
// The value's size is known before any copy (it is a slice of doc), so a
// budget (nil: none) is checked before anything is written; a value over
// it costs nothing.
func lookupInto(ctx context.Context, m api.Module, doc []byte, path string, ptr, capacity uint32, budget *int) int64 {
	segs, err := parsePlainPath(path)
	if err != nil {
		return codeBadPath
	}
	val, ok, err := lookupPlain(ctx, doc, segs)
	switch {
	case err != nil:
		return codeDeadline
	case !ok:
		return codeMissing
	case budget != nil && len(val) > *budget:
		return codeOverLimit
	}
	n := writeBuf(m, val, ptr, capacity)
	if budget != nil && n == int64(len(val)) && uint64(capacity) >= uint64(len(val)) {
		*budget -= len(val)
	}
	return n
}

// writeBuf copies val into the guest's buffer when it fits and returns its
// length either way (the guest retries with a bigger buffer).
func writeBuf(m api.Module, val []byte, ptr, capacity uint32) int64 {
	if uint64(len(val)) <= uint64(capacity) && len(val) > 0 {
		if !m.Memory().Write(ptr, val) {
			return codeBadMemory
		}
	}
	return int64(len(val))
}

// instantiate makes a fresh instance: no file system, no environment, no
// arguments, no network, a fake wall clock and deterministic randomness;
// the monotonic clock is real (WithSysNanotime) so runtimes that measure
// elapsed time work. Stdout is discarded and stderr kept for error
// messages.
func (p *Plugin) instantiate(ctx context.Context) (*instance, error) {
	tail := &tailBuffer{max: stderrTail}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithSysNanotime().
		WithStderr(tail)
	mod, err := p.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, wasmmem.Allocator()), p.mod, cfg)
	if err != nil {
		return nil, p.classify(ctx, nil, tail, fmt.Errorf("instantiate: %w", err))
	}
	return &instance{
		mod:       mod,
		mem:       mod.Memory(),
		alloc:     mod.ExportedFunction(exportAlloc),
		free:      mod.ExportedFunction(exportFree),
		transform: mod.ExportedFunction(exportTransform),
		stderr:    tail,
	}, nil
}

// acquire counts a call in flight; false once the plugin is retired.
func (p *Plugin) acquire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retired {
		return false
	}
	p.inflight++
	return true
}

func (p *Plugin) release(ctx context.Context) {
	p.mu.Lock()
	p.inflight--
	last := p.retired && p.inflight == 0 && !p.done
	if last {
		p.done = true
	}
	p.mu.Unlock()
	if last {
		p.shutdown(ctx)
	}
}

// Close retires the plugin: new calls fail with ErrClosed, calls in flight
// finish, and the last one closes the runtime. It is idempotent.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.retired {
		p.mu.Unlock()
		return nil
	}
	p.retired = true
	last := p.inflight == 0
	if last {
		p.done = true
	}
	p.mu.Unlock()
	if last {
		p.shutdown(ctx)
	}
	return nil
}

func (p *Plugin) shutdown(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, i := range p.pool.drain() {
		_ = i.mod.Close(ctx)
	}
	if err := p.rt.Close(ctx); err != nil {
		p.log.Warn("closing the runtime", "error", err)
	}
	p.log.Debug("plugin closed", "sha256", p.sha)
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return p.name }

// SHA256 is a short hash of the module's bytes.
func (p *Plugin) SHA256() string { return p.sha }

// Plan runs the plugin in ModeRewrites: the layer.Layer view of a preset.
func (p *Plugin) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	return p.Run(ctx, d, ModeRewrites)
}

// Run builds the request for d, calls the plugin and checks its response.
func (p *Plugin) Run(ctx context.Context, d *layer.Doc, mode Mode) ([]layer.Rewrite, error) {
	req := BuildRequest(d, mode, p.config, p.cfg.LongString)
	out, err := p.Call(ctx, d, req)
	if err != nil {
		return nil, err
	}
	rws, err := ParseResponse(out, mode)
	if err != nil {
		return nil, &PluginError{Plugin: p.name, Err: err}
	}
	return rws, nil
}

// Call runs plugin_transform on one instance with the request req and
// returns the response bytes. d serves host.get_value (nil: nothing). A
// trap, timeout, over-limit output or failed host exchange discards the
// instance; a guest-reported error (ErrGuest) keeps it.
func (p *Plugin) Call(ctx context.Context, d *layer.Doc, req []byte) ([]byte, error) {
	if !p.acquire() {
		return nil, &PluginError{Plugin: p.name, Err: ErrClosed}
	}
	defer p.release(ctx)
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	cctx = context.WithValue(cctx, callKey{}, &callState{log: loggerFrom(ctx), doc: d, budget: p.cfg.valueBudget()})
	who := principalOf(d)
	inst := p.pool.take(who)
	if inst == nil {
		var err error
		if inst, err = p.instantiate(cctx); err != nil {
			return nil, err
		}
	}
	inst.owner, inst.owned = who, true
	inst.stderr.reset()
	out, keep, err := p.call(cctx, inst, req)
	if err != nil {
		err = p.classify(cctx, inst, inst.stderr, err)
	}
	if keep && err == nil || errors.Is(err, ErrGuest) {
		if evicted := p.pool.put(inst); evicted != nil {
			_ = evicted.mod.Close(context.WithoutCancel(ctx))
		}
	} else {
		_ = inst.mod.Close(context.WithoutCancel(ctx))
	}
	return out, err
}

// call does the ABI exchange; keep says whether the instance is reusable.
func (p *Plugin) call(ctx context.Context, inst *instance, req []byte) (out []byte, keep bool, err error) {
	if len(req) > int(^uint32(0)>>1) {
		return nil, true, fmt.Errorf("%w: request of %d bytes is too large", ErrBadResponse, len(req))
	}
	st := inst.stack[:]
	if inst.in == 0 || uint32(len(req)) > inst.inCap {
		if inst.in != 0 {
			st[0], st[1] = uint64(inst.in), uint64(inst.inCap)
			if err := inst.free.CallWithStack(ctx, st); err != nil {
				return nil, false, fmt.Errorf("plugin_free: %w", err)
			}
			inst.in, inst.inCap = 0, 0
		}
		size := max(uint32(len(req)), 4096)
		st[0] = uint64(size)
		if err := inst.alloc.CallWithStack(ctx, st); err != nil {
			return nil, false, fmt.Errorf("plugin_alloc: %w", err)
		}
		if st[0] == 0 {
			return nil, false, fmt.Errorf("%w: plugin_alloc(%d) returned 0", ErrBadResponse, size)
		}
		inst.in, inst.inCap = uint32(st[0]), size
	}
	in := inst.in
	if !inst.mem.Write(in, req) {
		return nil, false, fmt.Errorf("%w: plugin_alloc(%d) returned %#x, outside memory", ErrBadResponse, len(req), in)
	}
	st[0], st[1] = uint64(in), uint64(len(req))
	if err := inst.transform.CallWithStack(ctx, st); err != nil {
		return nil, false, err
	}
	res := st[0]
	optr, olen := uint32(res>>32), uint32(res)
	guestErr := olen&errFlag != 0
	olen &^= errFlag
	if max := p.cfg.MaxOutputBytes; int64(olen) > int64(max) {
		return nil, false, fmt.Errorf("%w: %d bytes, limit %d", ErrOutputTooLarge, olen, max)
	}
	b, ok := inst.mem.Read(optr, olen)
	if !ok {
		return nil, false, fmt.Errorf("%w: response at %#x+%d lies outside memory", ErrBadResponse, optr, olen)
	}
	out = bytes.Clone(b)
	if olen > 0 {
		st[0], st[1] = uint64(optr), uint64(olen)
		if err := inst.free.CallWithStack(ctx, st); err != nil {
			return nil, false, fmt.Errorf("plugin_free: %w", err)
		}
	}
	if guestErr {
		msg := strings.ToValidUTF8(string(out), "\uFFFD")
		if len(msg) > 1024 {
			msg = msg[:1024] + "…"
		}
		return nil, true, fmt.Errorf("%w: %s", ErrGuest, msg)
	}
	return out, true, nil
}

// classify turns a failed exchange into a *PluginError with a sentinel.
func (p *Plugin) classify(ctx context.Context, inst *instance, tail *tailBuffer, err error) error {
	var pe *PluginError
	if errors.As(err, &pe) {
		return err
	}
	var exit *sys.ExitError
	switch {
	case errors.Is(err, ErrGuest), errors.Is(err, ErrBadResponse), errors.Is(err, ErrOutputTooLarge):
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(context.Cause(ctx), context.Canceled):
		err = fmt.Errorf("%w after %v: %w", ErrTimeout, p.cfg.Timeout, err)
	case ctx.Err() != nil:
		err = fmt.Errorf("call canceled: %w", ctx.Err())
	case inst != nil && p.nearMemoryLimit(inst, tail):
		err = fmt.Errorf("%w (%d MiB): %s", ErrMemoryLimit, p.cfg.MemoryLimitPages/16, firstLine(err))
	case errors.As(err, &exit):
		err = fmt.Errorf("%w: exited with code %d", ErrTrap, exit.ExitCode())
	default:
		if p.log.IsDebug() {
			p.log.Debug("guest trapped", "error", err.Error())
		}
		err = fmt.Errorf("%w: %s", ErrTrap, firstLine(err))
	}
	if s := strings.TrimSpace(tail.String()); s != "" {
		err = fmt.Errorf("%w; guest stderr: %s", err, s)
	}
	return &PluginError{Plugin: p.name, Err: err}
}

// nearMemoryLimit reports whether a failed instance had grown its memory to
// the cap: within an eighth of it (runtimes grow their heaps in steps of
// megabytes), or its runtime said it ran out of memory.
func (p *Plugin) nearMemoryLimit(inst *instance, tail *tailBuffer) bool {
	limit := uint64(p.cfg.MemoryLimitPages) * 65536
	size := uint64(inst.mem.Size())
	return size+max(limit/8, 8<<20) >= limit || strings.Contains(tail.String(), "out of memory")
}

// firstLine is an error's first line (a wasm trap appends its stack).
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSpace(s)
}

// tailBuffer keeps the first max bytes written to it: a guest's panic
// message comes first, its goroutine dump after.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write keeps what fits and reports all of b written.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.buf); room > 0 {
		t.buf = append(t.buf, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// String returns the first lines written, at most three, on one line.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(strings.ToValidUTF8(string(t.buf), "\uFFFD"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
		if len(lines) == 3 {
			break
		}
	}
	return strings.Join(lines, " | ")
}

func (t *tailBuffer) reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

type loggerKey struct{}

// WithLogger returns a ctx whose plugin calls log guest lines into log
// (named after the plugin) instead of the host's logger; the layers pass
// the engine's layer logger, so lines carry the server and tool.
func WithLogger(ctx context.Context, log hclog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

func loggerFrom(ctx context.Context) hclog.Logger {
	l, _ := ctx.Value(loggerKey{}).(hclog.Logger)
	return l
}

var _ layer.Layer = (*Plugin)(nil)
var _ layer.Closer = (*Plugin)(nil)
