package web

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/telemetry"
	"github.com/mcpx-dev/mcpx/telemetry/promtext"
)

// POST /transform is counted as the gateway's tools/call is (calls,
// errors, latency, what was kept out), and the same bytes transformed
// twice count their bytes once: the second put is a re-store
// (mcpx_artifacts_deduplicated_total), read from a scrape of /metrics.
func TestTransformMetrics(t *testing.T) {
	t.Parallel()
	reg := promtext.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := newAPIFixtureWith(t, testTokens, auth.Limits{}, func(o *APIOptions) { o.Observer, o.Metrics = m, reg },
		func(o *engine.Options) {
			bus := o.Listener
			o.Listener = engine.ListenerFunc(func(ev engine.Event) { bus.OnEvent(ev); m.OnEvent(ev) })
		})
	doc := []byte("%PDF-1.4\n" + strings.Repeat("quarterly numbers ", 86) + "\n%%EOF\n")
	result := fmt.Sprintf(`{"content":[{"type":"resource","resource":{"uri":"file:///q.pdf","mimeType":"application/pdf","blob":%q}}]}`,
		base64.StdEncoding.EncodeToString(doc))
	var kept int64
	for i, tok := range []string{"tok-alice", "tok-bob"} {
		code, out, _ := f.do("POST", "/transform?server=files&tool=export", tok, strings.NewReader(result))
		if code != 200 {
			t.Fatalf("transform %d: %d %s", i, code, out)
		}
		kept += gjson.GetBytes(out, `_meta.mcpx/kept_out.bytes`).Int()
	}
	if code, out, _ := f.do("POST", "/transform?server=files&tool=export", "tok-alice", strings.NewReader(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`)); code != 200 {
		t.Fatalf("tool error: %d %s", code, out)
	}
	if code, out, _ := f.do("POST", "/transform?server=files&tool=export", "tok-alice", strings.NewReader(`not json`)); code != 422 {
		t.Fatalf("not JSON: %d %s, want 422", code, out)
	}
	code, scrape, _ := f.do("GET", "/metrics", "tok-alice", nil)
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, scrape)
	}
	for _, want := range []string{
		`mcpx_tool_calls_total{server="files",tool="export"} 4`,
		`mcpx_tool_call_errors_total{kind="tool",server="files",tool="export"} 1`,
		`mcpx_tool_call_errors_total{kind="rpc",server="files",tool="export"} 1`,
		`mcpx_tool_call_duration_seconds_count{server="files",tool="export"} 4`,
		fmt.Sprintf(`mcpx_kept_out_bytes_total{server="files",tool="export"} %d`, kept),
		`mcpx_artifacts_stored_total{server="files"} 2`,
		`mcpx_artifacts_deduplicated_total{server="files"} 1`,
		fmt.Sprintf(`mcpx_artifact_bytes_stored_total{server="files"} %d`, len(doc)),
	} {
		if !strings.Contains(string(scrape), "\n"+want+"\n") {
			name, _, _ := strings.Cut(want, "{")
			var got []string
			for _, l := range strings.Split(string(scrape), "\n") {
				if strings.HasPrefix(l, name+"{") {
					got = append(got, l)
				}
			}
			t.Errorf("want %s; the scrape has %q", want, got)
		}
	}
}
