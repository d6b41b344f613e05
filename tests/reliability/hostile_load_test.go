//go:build reliability

package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/internal/wasmtest"
)

// hostileModes are the misbehaving plugins of the hostile test guest
// (layers/wasm/testdata/hostile) the load runs beside, by the server
// whose custom layer runs them: one loops forever, one allocates
// without bound, one answers garbage instead of JSON.
var hostileModes = map[string]string{"loop": "loop", "grow": "grow", "garbage": "garbage"}

// TestLoadWithHostilePlugins: the load of TestLoadBlobs (64 sessions,
// one 1-10 MB binary each) while a quarter of the calls go through a
// server with a well-behaved chain and the rest through servers whose
// custom layer runs a hostile plugin with the default limits (2 s, 128
// MiB). Every call completes and stores its artifact (the failing layer
// is skipped), every artifact reads back byte-exact, and each plugin
// failure is counted in mcpx_layer_failures_total{layer="custom"}
// against its server. Each server answers one call at a time, so a few
// results reach each plugin at once; the memory plugins take at most is
// the calls running at once times their memory limit, whatever the
// number of sessions. So the load runs twice on one gateway: a quarter
// of the sessions first (which also starts the servers and compiles the
// plugin), then all of them, and the gateway's peak RSS over the full
// load may be at most maxLoadGrowth times its peak over the quarter:
// a gateway whose memory grows with the calls (1.36 GB before guest
// memory was mapped: layers/wasm's memory.go) fails, while a loaded
// machine, which slows both passes alike, does not.
func TestLoadWithHostilePlugins(t *testing.T) {
	dir := t.TempDir()
	guest := filepath.Join(dir, "hostile.wasm")
	if err := os.WriteFile(guest, wasmtest.Build(t, wasmtest.Go, "./layers/wasm/testdata/hostile"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	servers := map[string]map[string]any{"clean": nil}
	perServer := map[string]any{}
	for server, mode := range hostileModes {
		servers[server] = nil
		perServer[server] = map[string]any{"layers": map[string]any{"custom": map[string]any{
			"plugins": []any{map[string]any{"file": guest, "config": map[string]string{"mode_": mode}}},
		}}}
	}
	cfg := gatewayConfig(t, dir, addr, servers, map[string]any{"dir": filepath.Join(dir, "artifacts")})
	withPipeline(t, cfg, map[string]any{"servers": perServer})
	g := startGateway(t, cfg, addr)
	names := slices.Sorted(func(yield func(string) bool) {
		for s := range servers {
			if !yield(s) {
				return
			}
		}
	})
	sessions := make([]*session, loadSessions)
	for i := range sessions {
		s, err := newSession(g.URL())
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		sessions[i] = s
		defer s.close()
	}
	var (
		mu    sync.Mutex
		lat   = map[string][]time.Duration{}
		tolds []told
	)
	// load calls from each of sessions once, session i through server
	// i mod 4 with a blob of 1-10 MB by i; a quarter of the sessions
	// spans the sizes of them all.
	load := func(sessions []*session) {
		var wg sync.WaitGroup
		start := time.Now()
		for i, s := range sessions {
			wg.Go(func() {
				server := names[i%len(names)]
				seed := int64(i*loadSessions/len(sessions) + 1)
				size := int64(1<<20) + seed*9<<20/loadSessions // 1-10 MB
				t0 := time.Now()
				r, err := s.callBlob(server, seed, size)
				d := time.Since(t0)
				if err != nil {
					t.Errorf("%s: session %d: %v", server, i, err)
					return
				}
				if r.ID == "" || r.NotStored != "" {
					t.Errorf("%s: session %d: not stored: %s", server, i, tail(r.Text, 300))
					return
				}
				mu.Lock()
				lat[server] = append(lat[server], d)
				tolds = append(tolds, r)
				mu.Unlock()
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("%d calls of 1-10 MB from %d sessions in %s", len(sessions), len(sessions), time.Since(start).Round(time.Millisecond))
	}
	load(sessions[:loadSessions/4])
	quarter := g.peakRSS(t)
	g.resetPeakRSS(t)
	load(sessions)
	full := g.peakRSS(t)
	for _, server := range names {
		l := lat[server]
		slices.Sort(l)
		t.Logf("%s: %d calls, p50 %s, max %s", server, len(l), l[len(l)/2].Round(time.Millisecond), l[len(l)-1].Round(time.Millisecond))
	}
	for _, r := range tolds {
		if err := readBack(r); err != nil {
			t.Error(err)
		}
	}
	failures := layerFailures(t, g)
	for _, server := range names {
		want := len(lat[server])
		if _, hostile := hostileModes[server]; !hostile {
			want = 0
		}
		if got := failures[server]; got != want {
			t.Errorf("%s: %d custom-layer failures counted, want %d (one per call)", server, got, want)
		}
	}
	t.Logf("gateway peak RSS: %d MB over %d sessions, %d MB over %d", quarter>>20, loadSessions/4, full>>20, loadSessions)
	if float64(full) > maxLoadGrowth*float64(quarter) {
		t.Errorf("gateway peak RSS %d MB over %d sessions, over %.1f times the %d MB over %d: its memory grows with the calls",
			full>>20, loadSessions, maxLoadGrowth, quarter>>20, loadSessions/4)
	}
}

// withPipeline sets the "pipeline" section of the config file at path.
func withPipeline(t *testing.T, path string, pipeline map[string]any) {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(mustRead(t, path), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["pipeline"] = pipeline
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// layerFailures reads mcpx_layer_failures_total{layer="custom"} by
// server from the gateway's /metrics.
func layerFailures(t *testing.T, g *gateway) map[string]int {
	t.Helper()
	resp, err := http.Get("http://" + g.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "mcpx_layer_failures_total{") || !strings.Contains(l, `layer="custom"`) {
			continue
		}
		i := strings.Index(l, `server="`)
		j := strings.LastIndexByte(l, ' ')
		if i < 0 || j < 0 {
			t.Fatalf("metrics line %q", l)
		}
		server := l[i+8:]
		server = server[:strings.IndexByte(server, '"')]
		v, err := strconv.ParseFloat(l[j+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", l, err)
		}
		out[server] = int(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(fmt.Errorf("reading /metrics: %w", err))
	}
	return out
}
