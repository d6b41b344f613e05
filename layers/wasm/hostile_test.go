package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// TestHostileGuests runs misbehaving guests as the custom layer: each
// failure is an error naming the plugin with the right sentinel, the layer
// is skipped with a layer_failed event, and the result leaves the engine
// byte for byte as it came in.
func TestHostileGuests(t *testing.T) {
	bin := hostile(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "hostile.wasm")
	if err := os.WriteFile(file, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	in := readDoc(t, "tableau_download_workbook.json")
	cases := []struct {
		mode   string
		limits wasm.Limits
		want   error
		inErr  string
		maxDur time.Duration
	}{
		{mode: "loop", limits: wasm.Limits{Timeout: "1s"}, want: wasm.ErrTimeout, maxDur: 5 * time.Second},
		{mode: "sleep", limits: wasm.Limits{Timeout: "1s"}, want: wasm.ErrTimeout, maxDur: 5 * time.Second},
		{mode: "grow", limits: wasm.Limits{MemoryMiB: 32, Timeout: "60s"}, want: wasm.ErrMemoryLimit, maxDur: 60 * time.Second},
		{mode: "trap", want: wasm.ErrTrap, inErr: "assignment to entry in nil map"},
		{mode: "garbage", want: wasm.ErrBadResponse, inErr: "invalid character"},
		{mode: "wrong", want: wasm.ErrBadResponse, inErr: `action "explode"`},
		{mode: "unknown_field", want: wasm.ErrBadResponse, inErr: "rewritez"},
		{mode: "huge", limits: wasm.Limits{MaxOutputBytes: 1 << 20}, want: wasm.ErrOutputTooLarge},
		{mode: "badptr", want: wasm.ErrBadResponse, inErr: "outside memory"},
		{mode: "guesterr", want: wasm.ErrGuest, inErr: "cannot handle tool download_workbook"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			evs := &events{}
			cfg := engine.Config{
				Chain: []string{"custom"},
				Layers: map[string]json.RawMessage{"custom": rawJSON(t, wasm.CustomOptions{
					Plugins: []wasm.PluginFile{{File: file, Config: rawJSON(t, map[string]string{"mode_": tc.mode}), Limits: &tc.limits}},
				})},
			}
			eng := newEngine(t, cfg, evs)
			// Build the chain (compiling the guest) before timing calls.
			if err := eng.Validate("tableau", "download_workbook"); err != nil {
				t.Fatal(err)
			}
			for round := 0; round < 2; round++ { // the second round runs on a fresh instance
				start := time.Now()
				res, err := eng.Transform(context.Background(), engine.Call{Server: "tableau", Tool: "download_workbook"}, in)
				took := time.Since(start)
				if err != nil {
					t.Fatalf("Transform: %v", err)
				}
				if !bytes.Equal(res.Raw, in) {
					t.Fatalf("the result changed although the layer failed")
				}
				if len(res.Failures) != 1 {
					t.Fatalf("failures = %v, want one", res.Failures)
				}
				ferr := res.Failures[0]
				var le *engine.LayerError
				var pe *wasm.PluginError
				if !errors.As(ferr, &le) || le.Step != "custom" || !errors.As(ferr, &pe) || pe.Plugin != "hostile" {
					t.Fatalf("failure %v: want a LayerError of custom wrapping a PluginError of hostile", ferr)
				}
				if !errors.Is(ferr, tc.want) {
					t.Fatalf("failure %v: want %v", ferr, tc.want)
				}
				if tc.inErr != "" && !strings.Contains(ferr.Error(), tc.inErr) {
					t.Fatalf("failure %q: want it to say %q", ferr, tc.inErr)
				}
				if tc.maxDur > 0 && took > tc.maxDur {
					t.Fatalf("took %v, want under %v", took, tc.maxDur)
				}
				if got := evs.of(engine.EventLayerFailed); len(got) != round+1 || got[round].Layer != "custom" {
					t.Fatalf("layer_failed events = %+v", got)
				}
			}
		})
	}
}

// TestHostileThenChain: with the whole default chain, a failing custom
// plugin is skipped and the later layers still store the PDF.
func TestHostileThenChain(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "hostile.wasm")
	if err := os.WriteFile(file, hostile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Layers: map[string]json.RawMessage{"custom": rawJSON(t, wasm.CustomOptions{
		Plugins: []wasm.PluginFile{{File: file, Config: json.RawMessage(`{"mode_":"trap"}`)}},
	})}}
	eng := newEngine(t, cfg, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "local", Tool: "x"}, readDoc(t, "tableau_download_workbook.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].MIMEType != "application/pdf" {
		t.Fatalf("artifacts = %+v, want the PDF stored by a later layer", res.Artifacts)
	}
	if !json.Valid(res.Raw) {
		t.Fatal("output is not JSON")
	}
}

func TestMissingExports(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	cases := []struct {
		name, want string
		bin        []byte
	}{
		{"empty", `missing export "plugin_abi_v1"`, []byte("\x00asm\x01\x00\x00\x00")},
		{"noexport", `missing export "plugin_transform"`, wasmtest.Build(t, wasmtest.Go, "./layers/wasm/testdata/noexport")},
		{"notwasm", "compile", []byte("#!/bin/sh\necho hi\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Compile(context.Background(), tc.name, tc.bin, wasm.SandboxConfig{}, nil)
			var pe *wasm.PluginError
			if !errors.As(err, &pe) || pe.Plugin != tc.name || !errors.Is(err, wasm.ErrBadModule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadModule naming plugin %q and saying %q", err, tc.name, tc.want)
			}
		})
	}
	// The custom layer fails to build with that error, naming the file.
	file := filepath.Join(t.TempDir(), "broken.wasm")
	if err := os.WriteFile(file, cases[0].bin, 0o644); err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, engine.Config{Layers: map[string]json.RawMessage{"custom": rawJSON(t, wasm.CustomOptions{Plugins: []wasm.PluginFile{{File: file}}})}}, nil)
	if err := eng.Validate("s", "t"); err == nil || !strings.Contains(err.Error(), "plugin[broken]") {
		t.Fatalf("Validate = %v, want an error naming plugin[broken]", err)
	}
}

// TestSandbox: a guest sees no file system, no environment, no arguments
// and a fake wall clock.
func TestSandbox(t *testing.T) {
	t.Setenv("MCPX_SECRET", "s3cr3t")
	h := newHost(t, nil)
	p, err := h.Compile(context.Background(), "hostile", hostile(t), wasm.SandboxConfig{}, json.RawMessage(`{"mode_":"sandbox"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	d := layer.NewDoc(engine.Call{Server: "s", Tool: "t"}, []byte(`{"a":1}`))
	rws, err := p.Run(context.Background(), d, wasm.ModeCustom)
	if err != nil {
		t.Fatal(err)
	}
	if len(rws) != 1 {
		t.Fatalf("rewrites = %+v", rws)
	}
	got := gjson.ParseBytes(rws[0].Value)
	if got.Get("read_err").String() == "" || got.Get("readdir_err").String() == "" {
		t.Errorf("the guest could read files: %s", got.Raw)
	}
	if got.Get("env").Int() != 0 || got.Get("home").String() != "" || got.Get("args").Int() != 0 {
		t.Errorf("the guest sees environment or arguments: %s", got.Raw)
	}
	now, err := time.Parse(time.RFC3339, got.Get("now").String())
	if err != nil {
		t.Fatalf("now: %v", err)
	}
	if d := time.Since(now); d < 24*time.Hour && d > -24*time.Hour {
		t.Errorf("the guest sees the real wall clock: %v", now)
	}
}

// TestGetValue: host.get_value hands out full values within the budget.
func TestGetValue(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	doc := readDoc(t, "tableau_download_workbook.json")
	d := layer.NewDoc(engine.Call{Server: "s", Tool: "t"}, doc)
	content := gjson.GetBytes(d.Carriers()[0].Payload, "content").Raw
	for _, tc := range []struct {
		name   string
		budget int
		path   string
		want   int64
	}{
		{"fits", 1 << 20, "content", int64(len(content))},
		{"default budget", 0, "content", int64(len(content))},
		{"disabled", wasm.NoValueReads, "content", -2},
		{"disabled, any negative", -5, "content", -2},
		{"over budget", 1000, "content", -2},
		{"missing", 1 << 20, "nope", -1},
		{"result", 1 << 20, "result:isError", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := wasm.SandboxConfig{MaxValueBytes: tc.budget}
			p, err := h.Compile(context.Background(), "hostile", hostile(t), cfg, rawJSON(t, map[string]string{"mode_": "getvalue", "path_": tc.path}))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			rws, err := p.Run(context.Background(), d, wasm.ModeCustom)
			if err != nil {
				t.Fatal(err)
			}
			v := gjson.ParseBytes(rws[0].Value)
			if v.Get("len").Int() != tc.want {
				t.Fatalf("get_value(%q) = %d, want %d", tc.path, v.Get("len").Int(), tc.want)
			}
			if v.Get("config_len").Int() <= 0 {
				t.Fatalf("get_config(\"\") = %d", v.Get("config_len").Int())
			}
		})
	}
}

// TestLogBounded: guest lines go to hclog under the plugin's name, 64 a
// call at most.
func TestLogBounded(t *testing.T) {
	t.Parallel()
	var buf syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Output: &buf, Level: hclog.Trace})
	h := newHost(t, log)
	p, err := h.Compile(context.Background(), "chatty", hostile(t), wasm.SandboxConfig{}, json.RawMessage(`{"mode_":"log"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if _, err := p.Run(context.Background(), layer.NewDoc(engine.Call{}, []byte(`{}`)), wasm.ModeCustom); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "test.chatty: line "); n != 64 {
		t.Fatalf("%d lines logged, want 64:\n%s", n, out)
	}
	if !strings.Contains(out, "over the limit") {
		t.Fatalf("no warning about dropped lines:\n%s", out)
	}
}

func TestCloseIdempotent(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	p, err := h.Compile(context.Background(), "hostile", hostile(t), wasm.SandboxConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background(), layer.NewDoc(engine.Call{}, []byte(`{}`)), wasm.ModeCustom)
	if !errors.Is(err, wasm.ErrClosed) {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}

// TestCommandBuildSaysRebuild: a Go guest built
// without -buildmode=c-shared loaded, then every call failed with "guest
// trapped: plugin_alloc … call _start first". Now it fails to load, and the
// error says how to rebuild it.
func TestCommandBuildSaysRebuild(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	goCommand := filepath.Join(t.TempDir(), "command.wasm")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-o", goCommand, "./layers/wasm/testdata/hostile")
	cmd.Dir = wasmtest.Root(t)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build without -buildmode=c-shared: %v\n%s", err, out)
	}
	goBin, err := os.ReadFile(goCommand)
	if err != nil {
		t.Fatal(err)
	}
	for name, bin := range map[string][]byte{"go": goBin, "wat": watGuest(t, "command.wat", nil)} {
		_, err := h.Compile(context.Background(), name, bin, wasm.SandboxConfig{}, nil)
		if !errors.Is(err, wasm.ErrBadModule) || !strings.Contains(err.Error(), "rebuild with -buildmode=c-shared") ||
			!strings.Contains(err.Error(), "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared") {
			t.Errorf("%s: Compile = %v, want ErrBadModule saying to rebuild with -buildmode=c-shared", name, err)
		}
	}
}
