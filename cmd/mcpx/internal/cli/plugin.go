package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

var pluginTestCmd = command{
	name:     "plugin test",
	brief:    "run one WASM plugin on a result and print its rewrites",
	synopsis: "[--server NAME] [--tool NAME] [--arguments JSON] [--mode custom|rewrites] [--plugin-config JSON] [--timeout D] FILE.wasm [RESULT]\n       mcpx plugin test --dump-request [--server NAME] [--tool NAME] [--arguments JSON] [--mode M] [--plugin-config JSON] [RESULT]",
	about: `
Plugin test runs one WASM plugin (sdk/wasm-guest/ABI.md) on one tool result
(the file RESULT, or stdin) and prints, as JSON on stdout, the plugin's
rewrites and the outcome: the transformed result, the artifacts it would
store (kept in memory only: nothing is written) and the failed rewrites.

A plugin that traps, runs past its deadline, runs out of memory or answers
something malformed is an error: exit code 1 and one line on stderr that
names the plugin and the cause.

--dump-request runs no plugin: it prints the exact request JSON (ABI v1) a
plugin would receive for RESULT, with the same server, tool, arguments,
mode and config, for a guest's native tests (a Rust test can
include_bytes! it; Go tests call wasm.BuildRequest).`,
	example: `
mcpx plugin test plugin.wasm --server tableau --tool download_workbook result.json
mcpx plugin test --mode rewrites --plugin-config '{"preview":500}' github.wasm < result.json | jq .rewrites
mcpx plugin test --dump-request --server helpdesk --tool get_ticket --arguments '{"id":"T-1"}' ticket.json > testdata/request.json`,
}

// pluginFlags are the WASM flags of "mcpx transform".
type pluginFlags struct {
	plugins, presets []string
	dir              string
}

// register adds --plugin, --preset and --plugins to fs.
func (p *pluginFlags) register(fs *flag.FlagSet) {
	fs.Func("plugin", "run the WASM custom transformer `FILE.wasm` on every result (repeatable)", func(s string) error {
		p.plugins = append(p.plugins, s)
		return nil
	})
	fs.Func("preset", "run the built-in WASM preset `NAME` ("+strings.Join(presetNames(), ", ")+") besides the\nones that match the server (repeatable)", func(s string) error {
		p.presets = append(p.presets, s)
		return nil
	})
	fs.StringVar(&p.dir, "plugins", "", "load the plugins of the folder `DIR` (NAME.wasm with an optional NAME.json)")
}

// applyOr adds the flags' plugins to cfg for command c. It returns -1 when
// that worked, else the exit code, having reported the error: an unknown
// preset is a usage error (2), anything else a failure (1).
func (p *pluginFlags) applyOr(c command, cfg *engine.Config, stderr io.Writer) int {
	err := p.apply(cfg)
	switch {
	case err == nil:
		return -1
	case errors.Is(err, wasm.ErrUnknownPreset):
		return usageError(stderr, c, err)
	default:
		return fail(stderr, c, err)
	}
}

// apply adds the flags' plugins to the pipeline's global layer options.
func (p *pluginFlags) apply(cfg *engine.Config) error {
	if len(p.plugins) == 0 && len(p.presets) == 0 && p.dir == "" {
		return nil
	}
	if cfg.Layers == nil {
		cfg.Layers = map[string]json.RawMessage{}
	} else {
		layers := make(map[string]json.RawMessage, len(cfg.Layers)+2)
		for k, v := range cfg.Layers {
			layers[k] = v
		}
		cfg.Layers = layers
	}
	patch := func(layer string, f func(m map[string]any)) error {
		m := map[string]any{}
		if raw := cfg.Layers[layer]; len(raw) > 0 {
			// Numbers stay json.Number: a plugin's config may hold integers
			// that a float64 would round.
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				return fmt.Errorf("config layers.%s: %w", layer, err)
			}
		}
		f(m)
		b, err := json.Marshal(m)
		cfg.Layers[layer] = b
		return err
	}
	if len(p.plugins) > 0 || p.dir != "" {
		err := patch("custom", func(m map[string]any) {
			list, _ := m["plugins"].([]any)
			for _, f := range p.plugins {
				list = append(list, f)
			}
			if list != nil {
				m["plugins"] = list
			}
			if p.dir != "" {
				m["dir"] = p.dir
			}
			m["enabled"] = true
		})
		if err != nil {
			return err
		}
	}
	if len(p.presets) > 0 {
		for _, n := range p.presets {
			if _, ok := findPreset(n); !ok {
				return fmt.Errorf("--preset %s: %w (built in: %s)", n, wasm.ErrUnknownPreset, strings.Join(presetNames(), ", "))
			}
		}
		return patch("presets", func(m map[string]any) {
			list, _ := m["add"].([]any)
			for _, n := range p.presets {
				list = append(list, n)
			}
			m["add"] = list
			m["enabled"] = true
		})
	}
	return nil
}

func findPreset(name string) (string, bool) {
	for _, n := range presetNames() {
		if n == name {
			return n, true
		}
	}
	return "", false
}

// pluginOutcome is what "plugin test" prints.
type pluginOutcome struct {
	Plugin    string               `json:"plugin"`
	SHA256    string               `json:"sha256"`
	Mode      wasm.Mode            `json:"mode"`
	Rewrites  []layer.Rewrite      `json:"rewrites"`
	Result    json.RawMessage      `json:"result"`
	Artifacts []engine.ArtifactRef `json:"artifacts"`
	Failures  []string             `json:"failures,omitempty"`
	TookMS    float64              `json:"took_ms"`
}

func runPluginTest(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := pluginTestCmd
	fs := newFlagSet(c)
	var (
		server, tool, mode, pluginConfig, arguments string
		timeout                                     time.Duration
		dump                                        bool
	)
	fs.StringVar(&server, "server", "local", "the upstream server `NAME` the result came from")
	fs.StringVar(&tool, "tool", "", "the tool `NAME` the result came from")
	fs.StringVar(&mode, "mode", string(wasm.ModeCustom), "custom (may replace the payload) or rewrites (as presets run)")
	fs.StringVar(&pluginConfig, "plugin-config", "", "the plugin's config, a `JSON` object")
	fs.StringVar(&arguments, "arguments", "", "the call's arguments, a `JSON` object")
	fs.BoolVar(&dump, "dump-request", false, "print the request the plugin would receive (no FILE.wasm needed) and exit")
	fs.DurationVar(&timeout, "timeout", wasm.DefaultTimeout, "the deadline of the call")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if dump && len(pos) > 0 && strings.HasSuffix(pos[0], ".wasm") {
		pos = pos[1:] // the plugin is not needed to say what it would get
	}
	switch {
	case dump && len(pos) > 1:
		return usageError(stderr, c, fmt.Errorf("--dump-request: want at most one RESULT, got %d arguments", len(pos)))
	case !dump && (len(pos) < 1 || len(pos) > 2):
		return usageError(stderr, c, fmt.Errorf("want FILE.wasm and at most one RESULT, got %d arguments", len(pos)))
	}
	if mode != string(wasm.ModeCustom) && mode != string(wasm.ModeRewrites) {
		return usageError(stderr, c, fmt.Errorf("--mode %q: want custom or rewrites", mode))
	}
	if pluginConfig != "" && !json.Valid([]byte(pluginConfig)) {
		return usageError(stderr, c, errors.New("--plugin-config is not JSON"))
	}
	if arguments != "" && !json.Valid([]byte(arguments)) {
		return usageError(stderr, c, errors.New("--arguments is not JSON"))
	}
	if dump {
		return dumpRequest(c, engine.Call{Server: server, Tool: tool, Arguments: json.RawMessage(arguments)}, wasm.Mode(mode), pluginConfig, pos, stdin, stdout, stderr)
	}
	if timeout <= 0 {
		return usageError(stderr, c, errors.New("--timeout must be positive"))
	}
	var o common
	_, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	bin, err := os.ReadFile(pos[0])
	if err != nil {
		return fail(stderr, c, err)
	}
	in, err := readInput(pos[1:], stdin)
	if err != nil {
		return fail(stderr, c, err)
	}
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, wasm.HostOptions{Logger: log.Named("wasm")})
	if err != nil {
		return fail(stderr, c, err)
	}
	defer h.Close(ctx)
	name := strings.TrimSuffix(filepath.Base(pos[0]), ".wasm")
	p, err := h.Compile(ctx, name, bin, wasm.SandboxConfig{Timeout: timeout}, json.RawMessage(pluginConfig))
	if err != nil {
		return fail(stderr, c, err)
	}
	defer p.Close(ctx)
	call := engine.Call{Server: server, Tool: tool, Arguments: json.RawMessage(arguments)}
	tr, err := tryPlugin(ctx, p, call, in, wasm.Mode(mode), engine.Options{Store: memstore.New(memstore.Config{}), Logger: log})
	if err != nil {
		return fail(stderr, c, err)
	}
	res := tr.result
	out := pluginOutcome{
		Plugin: name, SHA256: p.SHA256(), Mode: wasm.Mode(mode), Rewrites: tr.rewrites, Result: res.Raw,
		Artifacts: res.Artifacts, TookMS: float64(tr.took.Microseconds()) / 1000,
	}
	if out.Rewrites == nil {
		out.Rewrites = []layer.Rewrite{}
	}
	if out.Artifacts == nil {
		out.Artifacts = []engine.ArtifactRef{}
	}
	for _, f := range res.Failures {
		out.Failures = append(out.Failures, f.Error())
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fail(stderr, c, err)
	}
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		return fail(stderr, c, fmt.Errorf("write output: %w", err))
	}
	return exitOK
}

// dumpRequest prints the request a plugin would receive for the result
// named by pos (or stdin): what "plugin test" would hand the plugin, byte
// for byte.
func dumpRequest(c command, call engine.Call, mode wasm.Mode, pluginConfig string, pos []string, stdin io.Reader, stdout, stderr io.Writer) int {
	in, err := readInput(pos, stdin)
	if err != nil {
		return fail(stderr, c, err)
	}
	d := layer.NewDoc(call, in)
	if err := d.Err(); err != nil {
		return fail(stderr, c, fmt.Errorf("result: %w", err))
	}
	if pluginConfig == "" {
		pluginConfig = "{}" // as the host hands a plugin without config
	}
	req := wasm.BuildRequest(d, mode, json.RawMessage(pluginConfig), wasm.DefaultLongString)
	if _, err := stdout.Write(append(req, '\n')); err != nil {
		return fail(stderr, c, fmt.Errorf("write output: %w", err))
	}
	return exitOK
}
