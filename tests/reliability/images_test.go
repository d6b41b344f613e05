//go:build reliability

package reliability

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/imagetest"
)

// imageResult is the upstream's "image" tool result for its arguments
// {w, h, depth}: one image block, a PNG whose pixels are all zero.
func imageResult(args gjson.Result) any {
	png := imagetest.PNG(int(args.Get("w").Int()), int(args.Get("h").Int()), imagetest.RGBA, int(args.Get("depth").Int()))
	return map[string]any{"content": []any{map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(png)}}}
}

// withLimits sets serve.limits in the config at path.
func withLimits(t *testing.T, path string, limits map[string]any) {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(mustRead(t, path), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["serve"].(map[string]any)["limits"] = limits
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentImageViewsStayInTheBudget: ten tool results, each a
// 7000x7000 16-bit RGBA PNG (49 MP, under the 50 MP cap; 392 MB decoded,
// 467 MB for its view), reach a built `mcpx serve --listen` at once for a
// claude-code client, whose profile takes images, with
// serve.limits.max_work_bytes at 512 MiB. Every call answers with the
// stored image referenced and either its downscaled view or the sentence
// saying why none came, and the gateway's peak RSS (VmHWM) grows past
// its idle baseline (after a first, small image) by no more than
// max_work_bytes and a margin of 128 MiB for the results in flight (a
// 3.3 MB line each, and its copies) and the garbage the collector has not
// yet taken. Before the budget, six such calls held 4.5 GB and ten
// killed the gateway (fatal error: out of memory).
func TestConcurrentImageViewsStayInTheBudget(t *testing.T) {
	const calls, workBytes, margin = 10, 512 << 20, 128 << 20
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := gatewayConfig(t, dir, addr, map[string]map[string]any{"shots": nil}, map[string]any{"dir": filepath.Join(dir, "artifacts")})
	withLimits(t, cfg, map[string]any{"max_work_bytes": workBytes})
	g := startGateway(t, cfg, addr)
	sessions := make([]*session, calls)
	for i := range sessions {
		s, err := newSessionAs(g.URL(), "claude-code")
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		sessions[i] = s
		defer s.close()
	}
	image := func(s *session, w, h, depth int) (gjson.Result, error) {
		res, err := s.rpc("tools/call", fmt.Sprintf(`{"name":"image","arguments":{"w":%d,"h":%d,"depth":%d}}`, w, h, depth))
		return res.Get("result"), err
	}
	first, err := image(sessions[0], 1200, 800, 8)
	if err != nil || first.Get("content.0.type").String() != "image" || !strings.Contains(first.Get("content.1.text").String(), "The image above is a 1200x800 copy") {
		t.Fatalf("a small image for claude-code: %v %.400s", err, first.Raw)
	}
	idle := g.peakRSS(t)

	results := make([]gjson.Result, calls)
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range sessions {
		wg.Go(func() {
			res, err := image(s, 7000, 7000, 16)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	took := time.Since(start)
	peak := g.peakRSS(t)

	views := 0
	for i, r := range results {
		text := r.Get(`content.#(type=="text").text`).String()
		switch {
		case !strings.Contains(text, "mcpx://artifacts/shots_"):
			t.Errorf("call %d: the image is not referenced: %.400s", i, r.Raw)
		case r.Get("content.0.type").String() == "image" && strings.Contains(text, "The image above is a 1568x1568 copy (png, "):
			views++
		case strings.Contains(text, "\nNo image view: decoding this 7000x7000 16-bit PNG takes 467.4 MB, and other work held all but ") &&
			strings.HasSuffix(text, " of this server's 536.9 MB of work memory (serve.limits.max_work_bytes) for the 5s a view waits; call the tool again for an image view."):
		default:
			t.Errorf("call %d: neither a view nor the reason: %.600s", i, r.Raw)
		}
	}
	t.Logf("%d calls in %v: %d views, %d referenced only; gateway RSS idle %d MiB, peak %d MiB (+%d MiB, budget %d MiB)",
		calls, took.Round(time.Millisecond), views, calls-views, idle>>20, peak>>20, (peak-idle)>>20, workBytes>>20)
	if views == 0 {
		t.Error("no call got a view: the budget holds one at a time")
	}
	if peak-idle > workBytes+margin {
		t.Errorf("the gateway's peak RSS grew by %d MiB, over max_work_bytes (%d MiB) + %d MiB", (peak-idle)>>20, workBytes>>20, margin>>20)
	}
}
