package gateway

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
)

// reportLatency adds p50 and p99 (microseconds) of the samples.
func reportLatency(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1000, "p50-us")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds())/1000, "p99-us")
}

// BenchmarkStdioDirect calls the stub's echo tool over stdio directly: the
// baseline of BenchmarkStdioGateway.
func BenchmarkStdioDirect(b *testing.B) {
	c, err := startStdio("stub", stubServer(b), hclog.NewNullLogger(), connHandlers{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	ctx := context.Background()
	if _, err := c.call(ctx, "initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`)); err != nil {
		b.Fatal(err)
	}
	params := json.RawMessage(toolCall("echo", `{"v":"small"}`))
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.call(ctx, "tools/call", params); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
	}
	reportLatency(b, samples)
}

// BenchmarkStdioGateway makes the same call through the gateway (a stdio
// session in process, the stub upstream over stdio, the full layer chain).
func BenchmarkStdioGateway(b *testing.B) {
	g := newTestGateway(b, map[string]ServerConfig{"stub": stubServer(b)}, engine.Options{})
	c := connect(b, g)
	params := toolCall("echo", `{"v":"small"}`)
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		r := c.call("tools/call", params)
		samples = append(samples, time.Since(t0))
		if len(r) == 0 {
			b.Fatal("no response")
		}
	}
	reportLatency(b, samples)
}
