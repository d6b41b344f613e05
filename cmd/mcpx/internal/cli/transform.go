package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/memfdbuf"
	_ "github.com/mcpx-dev/mcpx/layers" // the built-in layers
)

var transformCmd = command{
	name:     "transform",
	brief:    "transform one tool result (a file or stdin) to stdout",
	synopsis: "[--config FILE] [--store DIR] [--server NAME] [--tool NAME] [--stats] [--plugin FILE.wasm]... [--preset NAME]... [--plugins DIR] [FILE]",
	about: `
Transform reads one tool result from FILE (or stdin when FILE is absent or
"-"), runs the layer chain over it, and writes the transformed JSON to
stdout. The input is an MCP CallToolResult ({"content": [...],
"structuredContent": ..., ...}) or any other JSON value.

Base64 blobs (PDFs, images, archives, ...) and oversized text are moved into
the artifact store; each is replaced in place by
{"artifact": {"id": ..., "mime_type": ..., ...}, "summary": "..."}.
Read the bytes back with "mcpx artifacts get ID".

--server and --tool name the upstream server and tool the result came
from: they select the per-server and per-tool options of the config file's
"pipeline" section, and the server name prefixes artifact ids.

A layer that fails is skipped with a warning on stderr; the output is still
written and the exit code is 0. A value the store cannot keep (a full
disk, an object store that is down) becomes a preview and a not_stored
note, and the result is still clamped to max_observation_chars: the exit
code is 0 and one warning on stderr names the failure. Input that is not
JSON is an error: exit code 1, the byte offset on stderr, nothing on
stdout.

--plugin, --preset and --plugins add WASM custom transformers, built-in
presets and a plugins folder for this run, besides those of the config.
In a plugins folder NAME.wasm serves the server NAME, unless a NAME.json
beside it names the servers and tools ({"servers": [...], "tools": [...],
"config": {...}}). Plugins, folders, sidecars and their config keys
(pipeline.layers.custom, .presets) are documented in docs/plugins.md;
"mcpx plugin new" writes a plugin project, "mcpx plugin test" runs one.`,
	example: `
mcpx transform --server tableau --tool download_workbook result.json > out.json
mcpx transform --config mcpx.json --server tableau --stats < result.json | jq .
mcpx transform --plugin my_plugin.wasm --server helpdesk --tool get_ticket result.json`,
}

// runTransform is "mcpx transform".
func (p program) runTransform(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := transformCmd
	fs := newFlagSet(c)
	var (
		o            common
		server, tool string
		stats        bool
	)
	o.register(fs, p.stores)
	fs.StringVar(&server, "server", "local", "the upstream server `NAME`: selects per-server options, prefixes artifact ids")
	fs.StringVar(&tool, "tool", "", "the tool `NAME`: selects per-tool options")
	fs.BoolVar(&stats, "stats", false, "print one line on stderr: bytes in and out, artifacts stored, time taken")
	var wasmFlags pluginFlags
	wasmFlags.register(fs)
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 1 {
		return usageError(stderr, c, fmt.Errorf("want at most one FILE, got %d arguments", len(pos)))
	}
	if server == "" {
		return usageError(stderr, c, errors.New("--server must not be empty"))
	}

	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	if code := wasmFlags.applyOr(c, &cfg.Pipeline, stderr); code >= 0 {
		return code
	}
	src, err := openInput(pos, stdin)
	if err != nil {
		return fail(stderr, c, err)
	}
	// Deferred first, run last: the store and the engine may read the
	// input's pages until they are closed.
	defer src.Close()
	// A large file is read beside the store's opening and the chain's
	// preparation (a preset's compile), which need none of it: each takes
	// milliseconds. Input of unknown size (a pipe) is read first.
	async := src.size >= warmInputBytes
	read := src.readAsync(async)
	var in []byte
	if !async {
		if in, err = read(); err != nil {
			return fail(stderr, c, err)
		}
	}
	ctx := context.Background()
	st, err := o.openStore(ctx, cfg, log)
	if err != nil {
		return fail(stderr, c, err)
	}
	defer closeStore(ctx, st, log)
	host, reg, err := newPluginHost(ctx, []string{server})
	if err != nil {
		return fail(stderr, c, err)
	}
	defer host.Close(ctx)
	var notStored atomic.Int64 // values the store failed to keep
	eo := engine.Options{Store: st, Config: cfg.Pipeline, Logger: log, Registry: reg,
		Listener: engine.ListenerFunc(func(ev engine.Event) {
			if ev.Type == engine.EventArtifactRefused && ev.Artifact.NotStored.Limit == "" {
				notStored.Add(1)
			}
		})}
	engineRetention(cfg.Store.RetentionFor(false), &eo)
	eng, err := engine.New(eo)
	if err != nil {
		return fail(stderr, c, err)
	}
	defer eng.Close(ctx)
	if async || len(in) >= warmInputBytes {
		// the chain's errors, if any, come from Transform
		_ = eng.Warm(ctx, server, tool)
	}
	if async {
		if in, err = read(); err != nil {
			return fail(stderr, c, err)
		}
	}
	// One transform's garbage is small beside the input it holds: collect
	// when the heap grows fivefold rather than twofold (a 10 MiB result
	// otherwise pays for two idle GC cycles). Not off with a memory limit:
	// a result whose live heap nears the limit then collects without end
	// (100,000 artifacts spent most of their time in the GC). Set once the
	// input is read: its allocation starts the one cycle a large input
	// needs while the heap holds little else; a first cycle postponed to
	// the payload's allocation stalls that for the whole mark phase.
	defer debug.SetGCPercent(debug.SetGCPercent(400))

	start := time.Now()
	call := engine.Call{Server: server, Tool: tool}
	if src.shared != nil {
		call.Pages = src.shared // payloads share the input's pages
	}
	res, err := eng.Transform(ctx, call, in)
	if err != nil {
		return fail(stderr, c, err)
	}
	took := time.Since(start)
	// The engine logs each of res.Failures as a warning ("layer failed;
	// result flows on"); the output is the safe pass-through.
	if _, err := stdout.Write(res.Raw); err != nil {
		return fail(stderr, c, fmt.Errorf("write output: %w", err))
	}
	warnNotStored(stderr, notStored.Load(), res.Failures)
	if stats {
		fmt.Fprintf(stderr, "mcpx transform: %d → %d bytes, %d %s stored, %d failed %s, %.1f ms\n",
			len(in), len(res.Raw), len(res.Artifacts), plural(len(res.Artifacts), "artifact", "artifacts"),
			len(res.Failures), plural(len(res.Failures), "step", "steps"), float64(took.Microseconds())/1000)
	}
	return exitOK
}

// warnNotStored says on stderr, in one line, that the store failed to
// keep n values, naming the first failure: the output is valid and within
// its budget (each such value is a preview and a not_stored note), so the
// exit code stays 0, but whoever runs transform must learn that the store
// is broken (a full disk) even with the log turned down. n comes from the
// artifact_refused events: failures lists at most a few of a step's.
func warnNotStored(stderr io.Writer, n int64, failures []error) {
	i := slices.IndexFunc(failures, func(f error) bool { return errors.Is(f, engine.ErrStoreWrite) })
	if n == 0 || i < 0 {
		return
	}
	fmt.Fprintf(stderr, "mcpx transform: warning: %d %s not stored, the artifact store failed: %v; the output holds a preview and a not_stored note in place of each\n",
		n, plural(int(n), "value", "values"), failures[i])
}

// warmInputBytes is the input size from which `mcpx transform` lets the
// chain prepare in the background (a preset's compile) while it reads the
// input (a file of known size) and the engine indexes it: a large input
// takes long enough for them to overlap, and a small one may hold no
// string a preset would look at, so it would load the preset for nothing.
const warmInputBytes = 64 << 10

// readInput reads the file named by pos, or stdin when there is none or it
// is "-", onto the heap.
func readInput(pos []string, stdin io.Reader) ([]byte, error) {
	src, err := openInput(pos, stdin)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	b, err := readAllSized(src.r, src.size)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src.name, err)
	}
	return b, nil
}

// input is the result a command reads: the file named by its argument, or
// stdin.
type input struct {
	r    io.Reader
	name string // for errors: the file's name, or "stdin"
	f    *os.File
	// size is what is left to read of a regular file (a FILE argument, or
	// stdin redirected from one), -1 when unknown (a pipe).
	size int64
	// shared is the input read into a memfd (memfdbuf), released by Close.
	shared *memfdbuf.Buffer
	// pending is closed when a read on another goroutine is done.
	pending chan struct{}
}

// openInput opens the file named by pos, or stdin when there is none or it
// is "-". A missing or unreadable file fails here, before anything else.
func openInput(pos []string, stdin io.Reader) (*input, error) {
	in := &input{r: stdin, name: "stdin", size: -1}
	if len(pos) > 0 && pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return nil, err // *PathError names the file
		}
		in.r, in.name, in.f = f, pos[0], f
	}
	in.size = regularSize(in.r)
	return in, nil
}

// Close releases the input's memfd and closes the file the input opened
// (not stdin). The bytes read are not to be used after.
func (in *input) Close() {
	if in.pending != nil {
		<-in.pending
	}
	if in.shared != nil {
		in.shared.Release()
	}
	if in.f != nil {
		in.f.Close()
	}
}

// readAsync reads the input to the end, on another goroutine when async is
// set; the returned function waits for the bytes (and may be called again).
func (in *input) readAsync(async bool) func() ([]byte, error) {
	read := func() ([]byte, error) {
		if f, ok := in.r.(*os.File); ok && in.size >= sharedReadMin {
			if b, err := memfdbuf.ReadFile(f, in.size); err == nil {
				in.shared = b
				return b.Bytes(), nil
			}
			// not here, or the file changed since its Stat: read it
		}
		b, err := readAllSized(in.r, in.size)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", in.name, err)
		}
		return b, nil
	}
	if !async {
		return read
	}
	var (
		b    []byte
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		b, err = read()
	}()
	in.pending = done
	return func() ([]byte, error) {
		<-done
		return b, err
	}
}

// sharedReadMin is the input file size from which mcpx transform reads it
// into a memfd (internal/memfdbuf) rather than the heap: a JSON-in-text
// payload then shares the pages of a long run (a base64 file) with the
// input instead of copying it, and the read itself is a copy inside the
// kernel. Smaller inputs gain little against a mapping's cost.
const sharedReadMin = 1 << 20

// regularSize is what is left to read of r when it is a regular file, -1
// otherwise.
func regularSize(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return -1
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	left := fi.Size()
	if pos, err := f.Seek(0, io.SeekCurrent); err == nil && pos <= left {
		left -= pos
	}
	return left
}

// readAll reads r to the end. When r is a regular file (a FILE argument,
// or stdin redirected from one) the buffer is sized from Stat up front, so
// a 100 MB input costs one allocation and no copies; pipes grow the buffer
// as they go.
func readAll(r io.Reader) ([]byte, error) { return readAllSized(r, regularSize(r)) }

// readAllSized is readAll of an r of size bytes left (-1 when unknown).
func readAllSized(r io.Reader, size int64) ([]byte, error) {
	n := 512
	if size >= 0 && size < math.MaxInt {
		n = max(n, int(size)+1) // +1: the read that sees EOF needs no room
	}
	buf := make([]byte, 0, n)
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
	}
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
