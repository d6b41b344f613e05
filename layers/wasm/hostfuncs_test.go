package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// bigPayload is a tool result of about 224 KB: the payload of the @pretty
// reproduction (TestHostLookupsWithinLimits).
func bigPayload(t testing.TB) []byte {
	t.Helper()
	var items []map[string]any
	for i := 0; len(items) < 2000; i++ {
		items = append(items, map[string]any{"id": i, "name": fmt.Sprintf("item %d", i), "tags": []string{"a", "b", "c"}, "note": strings.Repeat("x", 40)})
	}
	payload, err := json.Marshal(map[string]any{"items": items, "we.ird": map[string]any{"@key": 7}})
	if err != nil {
		t.Fatal(err)
	}
	if len(payload) < 200_000 {
		t.Fatalf("payload of %d bytes, want about 224 KB", len(payload))
	}
	return []byte(`{"content":[],"structuredContent":` + string(payload) + `}`)
}

// runGetValue runs the getvalue guest with path against doc and config,
// and returns the codes (or lengths) get_value and get_config answered.
func runGetValue(t *testing.T, h *wasm.Host, cfg wasm.SandboxConfig, doc []byte, config, path string, repeat int) (value, conf int64, err error) {
	t.Helper()
	bin := watGuest(t, "getvalue.wat", map[string]string{"PATH": watString(path), "PATHLEN": strconv.Itoa(len(path)), "REPEAT": strconv.Itoa(repeat)})
	p, err := h.Compile(context.Background(), "getvalue", bin, cfg, json.RawMessage(config))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	rws, err := p.Run(context.Background(), layer.NewDoc(engine.Call{Server: "s", Tool: "t"}, doc), wasm.ModeCustom)
	if err != nil {
		return 0, 0, err
	}
	v := gjson.ParseBytes(rws[0].Value)
	return v.Get("value").Int(), v.Get("config").Int(), nil
}

// TestHostLookupsArePlainPaths: get_value and get_config take plain paths
// only (keys, indexes, `\` escapes); every gjson feature that builds or
// searches (modifiers, pipes, queries, multipaths, wildcards, "..") is -4,
// answered without building anything.
func TestHostLookupsArePlainPaths(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	doc := bigPayload(t)
	config := `{"items":[{"name":"c0"}],"we.ird":{"@key":7},"n":12345678901234567890}`
	item3 := gjson.GetBytes(doc, "structuredContent.items.3").Raw
	cases := []struct {
		path       string
		value, cfg int64
	}{
		{`items.3`, int64(len(item3)), -1},
		{`items.0.name`, int64(len(`"item 0"`)), int64(len(`"c0"`))},
		{`we\.ird.\@key`, 1, 1},
		{`n`, -1, 20},
		{`items.03`, -1, -1}, // an index has no leading zero
		{`items.x`, -1, -1},
		{`nope`, -1, -1},
		{`@pretty:{"indent":"` + strings.Repeat(" ", 4096) + `"}`, -4, -4},
		{`@this`, -4, -4},
		{`items|@reverse`, -4, -4},
		{`items.#`, -4, -4},
		{`items.#(id==3)`, -4, -4},
		{`items.#.name`, -4, -4},
		{`[items,items]`, -4, -4},
		{`{a:items}`, -4, -4},
		{`items.*`, -4, -4},
		{`ite?s`, -4, -4},
		{`..items`, -4, -4},
		{`items..0`, -4, -4},
		{`items.`, -4, -4},
		{`items\`, -4, -4},
		{`!true`, -4, -4},
	}
	for _, tc := range cases {
		t.Run(tc.path[:min(len(tc.path), 24)], func(t *testing.T) {
			v, c, err := runGetValue(t, h, wasm.SandboxConfig{}, doc, config, tc.path, 1)
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.value || c != tc.cfg {
				t.Fatalf("get_value, get_config(%q) = %d, %d; want %d, %d", tc.path, v, c, tc.value, tc.cfg)
			}
		})
	}
}

// TestHostLookupsWithinLimits: @pretty with a
// 4 KB indent on a 224 KB payload took 4 s and 351 MB against a 200 ms
// deadline, and a 2 MB indent ran the process out of memory. Now both are
// refused at once: a guest asking 200 times stays within the deadline (1 s
// here, for loaded CI machines: one such lookup took 4 s before), and the
// 2 MB path is refused by its length without being copied.
func TestHostLookupsWithinLimits(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	doc := bigPayload(t)
	cfg := wasm.SandboxConfig{Timeout: time.Second}
	for _, indent := range []int{4 << 10, 2 << 20} {
		path := `@pretty:{"indent":"` + strings.Repeat(" ", indent) + `"}`
		v, c, err := runGetValue(t, h, cfg, doc, `{"a":1}`, path, 200)
		if err != nil {
			t.Fatalf("indent %d: %v (the lookups ran past the deadline)", indent, err)
		}
		if v != -4 || c != -4 {
			t.Fatalf("indent %d: get_value, get_config = %d, %d; want -4, -4", indent, v, c)
		}
	}
	// The budget is checked before a value is copied: the whole payload
	// over a 1 KB budget is -2, each time it is asked for.
	small := cfg
	small.MaxValueBytes = 1024
	v, _, err := runGetValue(t, h, small, doc, `{}`, "items", 5)
	if err != nil || v != -2 {
		t.Fatalf("get_value over budget = %d, %v; want -2", v, err)
	}
}

// TestHostLookupLoopStopsAtDeadline: a guest that calls get_value in a
// loop forever is stopped by the call's deadline.
func TestHostLookupLoopStopsAtDeadline(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	_, _, err := runGetValue(t, h, wasm.SandboxConfig{Timeout: 200 * time.Millisecond}, bigPayload(t), `{}`, "items.1999", 1<<31-1)
	if !errors.Is(err, wasm.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

// TestConfigIntegersExact: integers in a plugin's
// config went through float64 when the engine merged the layer's options
// (global, then per server), and 12345678901234567890 reached the guest as
// 12345678901234567000. The keep guest echoes its request (config
// included); get_config hands the same digits.
func TestConfigIntegersExact(t *testing.T) {
	t.Parallel()
	const big = "12345678901234567890"
	const path = "n"
	keep := filepath.Join(t.TempDir(), "keep.wasm")
	must(t, os.WriteFile(keep, watGuest(t, "keep.wat", nil), 0o644))
	h := newHost(t, nil)
	global := json.RawMessage(`{"plugins":[{"file":` + strconv.Quote(keep) + `,"config":{"n":` + big + `,"f":1.5e300}}]}`)
	// The server's patch replaces the list: a merge, so every number passes
	// through the merge code.
	server := json.RawMessage(`{"limits":{"timeout":"5s"},"plugins":[{"file":` + strconv.Quote(keep) + `,"config":{"n":` + big + `,"f":1.5e300,"neg":-9007199254740993}}]}`)
	eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"custom"},
		Layers:  map[string]json.RawMessage{"custom": global},
		Servers: map[string]engine.ServerConfig{"s": {Layers: map[string]json.RawMessage{"custom": server}}},
	}, nil)
	in := []byte(`{"content":[{"type":"text","text":"{\"ok\":true}"}]}`)
	var out string
	for i := 0; i < 2; i++ { // keep answers with the previous request: its config
		res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
		if err != nil || len(res.Failures) > 0 {
			t.Fatalf("Transform: %v %v", err, res.Failures)
		}
		out = string(res.Raw)
	}
	for _, want := range []string{`\"n\":` + big, `\"neg\":-9007199254740993`, `\"f\":1.5e300`} {
		if !strings.Contains(out, want) {
			t.Fatalf("the guest's config lost %s: %s", want, out)
		}
	}
	// get_config hands the same digits.
	v, c, err := runGetValue(t, h, wasm.SandboxConfig{}, []byte(`{}`), `{"n":`+big+`}`, path, 1)
	if err != nil || v != -1 || c != int64(len(big)) {
		t.Fatalf("get_value, get_config = %d, %d, %v; want -1, %d", v, c, err, len(big))
	}
}
