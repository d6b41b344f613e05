package wasm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// TestPresetsLayer: the preset that matches the server by name runs, loads
// on the first matching call only, and other servers run none.
func TestPresetsLayer(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	h := newHost(t, log)
	eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"presets"}}, log)
	in := readDoc(t, "tableau_download_workbook.json")

	res, err := eng.Transform(context.Background(), engine.Call{Server: "github", Tool: "download_workbook"}, in)
	if err != nil || len(res.Artifacts) != 0 || len(res.Failures) != 0 {
		t.Fatalf("github server: %v %+v %v", err, res.Artifacts, res.Failures)
	}
	if strings.Contains(logs.String(), "preset loaded: preset=tableau") {
		t.Fatal("the tableau preset loaded for a github call")
	}
	res, err = eng.Transform(context.Background(), engine.Call{Server: "tableau-prod", Tool: "download_workbook"}, in)
	if err != nil || len(res.Artifacts) != 1 || res.Artifacts[0].Source.Layer != "presets" {
		t.Fatalf("tableau server: %v %+v %v", err, res.Artifacts, res.Failures)
	}
	if !strings.Contains(string(res.Raw), "Downloaded workbook 'Sales Dashboard' as PDF") {
		t.Fatalf("summary does not name the workbook: %s", res.Raw)
	}
	if _, err := eng.Transform(context.Background(), engine.Call{Server: "tableau-prod", Tool: "download_workbook"}, in); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "preset loaded: preset=tableau"); n != 1 {
		t.Fatalf("preset loaded %d times, want once:\n%s", n, logs.String())
	}
}

func TestPresetsOptions(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	for _, tc := range []struct {
		opts, err string
	}{
		{`{"names":["nope"]}`, "unknown preset"},
		{`{"names":["tableau"],"config":{"github":{}}}`, "no such preset"},
		{`{"limits":{"timeout":"-1s"}}`, "limits.timeout"},
		{`{"bogus":1}`, "unknown field"},
	} {
		eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"presets"}, Layers: map[string]json.RawMessage{"presets": json.RawMessage(tc.opts)}}, nil)
		if err := eng.Validate("tableau", "x"); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Validate = %v, want %q", tc.opts, err, tc.err)
		}
	}
	_ = h.PresetNames()
}

// TestCustomShared: the chains of two tools that name the same plugin file
// share one compiled plugin, closed with the last of them.
func TestCustomShared(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	h := newHost(t, log)
	file := filepath.Join(t.TempDir(), "shared.wasm")
	if err := os.WriteFile(file, hostile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Chain: []string{"custom"}, Layers: map[string]json.RawMessage{"custom": rawJSON(t, wasm.CustomOptions{Plugins: []wasm.PluginFile{{File: file}}})}}
	eng := newEngineWithHost(t, h, cfg, log)
	for _, tool := range []string{"a", "b", "c"} {
		if err := eng.Validate("s", tool); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "shared: plugin compiled"); n != 1 {
		t.Fatalf("compiled %d times for three tools, want once:\n%s", n, logs.String())
	}
	if err := eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "shared: plugin closed"); n != 1 {
		t.Fatalf("closed %d times, want once after the last layer:\n%s", n, logs.String())
	}
}

// TestPresetsNotLoadedWithoutCandidates: a preset that rewrites only
// candidates is neither loaded nor run for a result without a string as
// long as the layer's long_string limit; such a result passes unchanged.
// Where the limit makes the same string a candidate, the preset runs and
// stores it.
func TestPresetsNotLoadedWithoutCandidates(t *testing.T) {
	t.Parallel()
	call := engine.Call{Server: "tableau", Tool: "download_workbook"}
	pdf := base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\n" + strings.Repeat("x", 60))) // 92 characters
	small := []byte(`{"content":[{"type":"text","text":"{\"name\":\"Sales\",\"content\":\"` + pdf + `\"}"}]}`)
	for _, tc := range []struct {
		name, opts string
		runs       bool
	}{
		{"default threshold", `{}`, false},
		{"threshold under the string", `{"limits":{"long_string":64}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
			h := newHost(t, log)
			eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"presets"}, Layers: map[string]json.RawMessage{"presets": json.RawMessage(tc.opts)}}, log)
			res, err := eng.Transform(context.Background(), call, small)
			if err != nil || len(res.Failures) != 0 {
				t.Fatalf("%v %v", err, res.Failures)
			}
			if !tc.runs {
				if string(res.Raw) != string(small) || len(res.Artifacts) != 0 {
					t.Fatalf("a result without candidates changed: %s", res.Raw)
				}
				if strings.Contains(logs.String(), "preset loaded") {
					t.Fatalf("the preset loaded for a result without candidates:\n%s", logs.String())
				}
				return
			}
			if len(res.Artifacts) != 1 || res.Artifacts[0].Source.Layer != "presets" || res.Artifacts[0].MIMEType != "application/pdf" {
				t.Fatalf("with the string a candidate the preset should store it: %+v", res.Artifacts)
			}
		})
	}
}

// TestPresetsWarm: Engine.Warm starts the matching preset's load in the
// background before any result; the call that then runs it uses that
// load (the preset is loaded once).
func TestPresetsWarm(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	h := newHost(t, log)
	eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"presets"}}, log)
	ctx := context.Background()
	if err := eng.Warm(ctx, "tableau", "download_workbook"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(logs.String(), "preset loaded: preset=tableau") {
		if time.Now().After(deadline) {
			t.Fatalf("Warm did not load the preset:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, readDoc(t, "tableau_download_workbook.json"))
	if err != nil || len(res.Artifacts) != 1 {
		t.Fatalf("transform after Warm: %v %+v %v", err, res.Artifacts, res.Failures)
	}
	if n := strings.Count(logs.String(), "preset loaded: preset=tableau"); n != 1 {
		t.Fatalf("preset loaded %d times, want once", n)
	}
}
