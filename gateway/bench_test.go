package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
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
	c, err := upstream.DialStdio("stub", stubServer(b), config.Limits{}.WithDefaults(), hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Call(ctx, "initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`)); err != nil {
		b.Fatal(err)
	}
	params := json.RawMessage(toolCall("echo", `{"v":"small"}`))
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Call(ctx, "tools/call", params); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
	}
	reportLatency(b, samples)
}

// BenchmarkStdioGateway makes the same call through the gateway (a stdio
// session in process, the stub upstream over stdio, the full layer chain).
func BenchmarkStdioGateway(b *testing.B) {
	g := newTestGateway(b, map[string]config.ServerConfig{"stub": stubServer(b)}, engine.Options{})
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

// benchCallers is how many callers share one connection in the
// concurrent benchmarks: a client with that many calls in flight.
const benchCallers = 16

// inParallel runs b.N calls of call spread over n goroutines and reports
// calls/s and the latency percentiles of the calls.
func inParallel(b *testing.B, n int, call func() error) {
	var (
		next    atomic.Int64
		mu      sync.Mutex
		samples = make([]time.Duration, 0, b.N)
		wg      sync.WaitGroup
		failed  atomic.Value
	)
	total := int64(b.N)
	b.ResetTimer()
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, b.N/n+1)
			for next.Add(1) <= total {
				t0 := time.Now()
				if err := call(); err != nil {
					failed.Store(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	reportLatency(b, samples)
}

// concurrentDirect runs 16 callers sharing one direct stdio connection
// to cfg's server, each with one call of tool in flight.
func concurrentDirect(b *testing.B, cfg config.ServerConfig, tool, args string) {
	c, err := upstream.DialStdio("direct", cfg, config.Limits{}.WithDefaults(), hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Call(ctx, "initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`)); err != nil {
		b.Fatal(err)
	}
	_ = c.Notify(ctx, "notifications/initialized", nil)
	params := json.RawMessage(toolCall(tool, args))
	inParallel(b, benchCallers, func() error {
		_, err := c.Call(ctx, "tools/call", params)
		return err
	})
}

// concurrentGateway runs the same 16 callers sharing one stdio session of
// the gateway (in process), which forwards to cfg's server over stdio.
func concurrentGateway(b *testing.B, cfg config.ServerConfig, tool, args string) {
	g := newTestGateway(b, map[string]config.ServerConfig{"up": cfg}, engine.Options{})
	c := connect(b, g)
	params := toolCall(tool, args)
	inParallel(b, benchCallers, func() error {
		_, ch := c.start("tools/call", params)
		r := <-ch
		if !gjson.GetBytes(r, "result").Exists() {
			return fmt.Errorf("tools/call: %s", r)
		}
		return nil
	})
}

// BenchmarkStdioConcurrentDirect: 16 callers share one direct stdio
// connection to the stub (a Go process that answers echo in microseconds),
// each with one call in flight.
func BenchmarkStdioConcurrentDirect(b *testing.B) {
	concurrentDirect(b, stubServer(b), "echo", `{"v":"small"}`)
}

// BenchmarkStdioConcurrentGateway: the same through one stdio session of
// the gateway.
func BenchmarkStdioConcurrentGateway(b *testing.B) {
	concurrentGateway(b, stubServer(b), "echo", `{"v":"small"}`)
}

// BenchmarkStdioConcurrentEverythingDirect: 16 callers share one direct
// stdio connection to server-everything (node), tool echo.
func BenchmarkStdioConcurrentEverythingDirect(b *testing.B) {
	concurrentDirect(b, everythingStdio(b), "echo", `{"message":"small"}`)
}

// BenchmarkStdioConcurrentEverythingGateway: the same through one stdio
// session of the gateway.
func BenchmarkStdioConcurrentEverythingGateway(b *testing.B) {
	concurrentGateway(b, everythingStdio(b), "echo", `{"message":"small"}`)
}

// BenchmarkStdioConcurrentWrap: the same 16 callers share one stdio
// connection to "mcpx wrap -- stub", a separate process, as an MCP
// client runs it.
func BenchmarkStdioConcurrentWrap(b *testing.B) {
	stub := stubServer(b)
	cfg := config.ServerConfig{Command: buildMCPX(b), Args: append([]string{"wrap", "--store", b.TempDir(), "--", stub.Command}, stub.Args...), Env: stub.Env}
	c, err := upstream.DialStdio("wrap", cfg, config.Limits{}.WithDefaults(), hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Call(ctx, "initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`)); err != nil {
		b.Fatal(err)
	}
	_ = c.Notify(ctx, "notifications/initialized", nil)
	params := json.RawMessage(toolCall("echo", `{"v":"small"}`))
	inParallel(b, benchCallers, func() error {
		_, err := c.Call(ctx, "tools/call", params)
		return err
	})
}

// BenchmarkEngineSmallResult is the engine's own work on the echo
// result the stdio benchmarks forward: the floor of what the gateway adds
// per call.
func BenchmarkEngineSmallResult(b *testing.B) {
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{})})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close(context.Background())
	raw := json.RawMessage(`{"content":[{"type":"text","text":"{\"v\":\"small\"}","annotations":{"audience":["user"]}}],"structuredContent":{"v":"small"},"_meta":{"k":"v"}}`)
	call := engine.Call{Server: "stub", Tool: "echo", Arguments: json.RawMessage(`{"v":"small"}`), Scope: store.Scope{SessionID: "s"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eng.Transform(ctx, call, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImage10MiB: a tool result holding a 10 MiB PNG as base64
// (about 13.3 MiB of JSON). "direct" is the transfer: the stub's answer
// read over stdio by a client; "engine" is the engine's own time on that
// result (decode, hash, store in memory, splice the ref); "gateway" is
// until a client of the gateway holds the summary. The target is gateway
// within 2x of engine + direct.
func BenchmarkImage10MiB(b *testing.B) {
	const size = 10 << 20
	args := fmt.Sprintf(`{"bytes":%d}`, size)
	ctx := context.Background()
	var raw json.RawMessage
	b.Run("direct", func(b *testing.B) {
		c, err := upstream.DialStdio("stub", stubServer(b), config.Limits{}.WithDefaults(), hclog.NewNullLogger())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Call(ctx, "initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`)); err != nil {
			b.Fatal(err)
		}
		params := json.RawMessage(toolCall("big", args))
		b.SetBytes(size)
		for b.Loop() {
			if raw, err = c.Call(ctx, "tools/call", params); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("engine", func(b *testing.B) {
		if raw == nil {
			b.Skip("run with the direct sub-benchmark")
		}
		eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{})})
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close(ctx)
		call := engine.Call{Server: "stub", Tool: "big", Arguments: json.RawMessage(args), Scope: store.Scope{SessionID: "s"}}
		b.SetBytes(size)
		for b.Loop() {
			res, err := eng.Transform(ctx, call, raw)
			if err != nil || len(res.Artifacts) != 1 {
				b.Fatalf("transform: %v, %d artifacts", err, len(res.Artifacts))
			}
		}
	})
	b.Run("gateway", func(b *testing.B) {
		g := newTestGateway(b, map[string]config.ServerConfig{"stub": stubServer(b)}, engine.Options{})
		c := connect(b, g)
		params := toolCall("big", args)
		b.SetBytes(size)
		for b.Loop() {
			r := c.call("tools/call", params)
			if len(r) > 4096 || !gjson.GetBytes(r, `result.content.#(type=="resource_link").uri`).Exists() {
				b.Fatalf("no summary: %.300s", r)
			}
		}
	})
}
