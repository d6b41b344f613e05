//go:build reliability

package reliability

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// loadSessions is how many client sessions call at once.
const loadSessions = 64

// maxLoadGrowth bounds how many times the gateway's peak memory over a
// load may exceed its peak over a quarter of that load on the same
// gateway: what results take is bounded by the calls running at once,
// which a quarter of the sessions already fills. Measured at a load
// average of 9-20 on two cores, as the gateway is: 1.45-1.6 with the
// hostile plugins (TestLoadWithHostilePlugins), 1.04 through a shared
// server and 1.42 through a pool (TestLoadBlobs); with every result kept
// (a leak added to engine.Transform for the measurement): 3.8 and 4.4.
const maxLoadGrowth = 2.5

// TestLoadBlobs: 64 concurrent sessions each call a tool that returns a
// 1-10 MB binary, once through a "shared" server and once through a
// "pool" one (pool_size 4), through a built `mcpx serve --listen`: no
// call fails, every artifact reads back byte-exact by its signed URL;
// calls/s and p50/p99 are logged for each. Results pass through the
// gateway one upstream line at a time (10 MB of blob is a 13.4 MB line)
// and a server answers as many at once as it has processes, so each
// server's load runs first from a quarter of the sessions: the
// gateway's peak RSS over all of them may be at most maxLoadGrowth
// times its peak over the quarter.
func TestLoadBlobs(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := gatewayConfig(t, dir, addr, map[string]map[string]any{
		"shared": nil,
		"pool":   {"instances": "pool", "pool_size": 4},
	}, map[string]any{"dir": filepath.Join(dir, "artifacts")})
	g := startGateway(t, cfg, addr)
	sessions := make([]*session, loadSessions)
	for i := range sessions {
		s, err := newSession(g.URL())
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		sessions[i] = s
	}
	for _, server := range []string{"shared", "pool"} {
		// The first call waits for the server's start (and the pool's).
		if _, err := sessions[0].callBlob(server, 0, 1<<20); err != nil {
			t.Fatal(err)
		}
		g.resetPeakRSS(t)
		var quarterDone sync.WaitGroup
		for i, s := range sessions[:loadSessions/4] {
			quarterDone.Go(func() {
				seed := int64(i*4 + 1)
				if _, err := s.callBlob(server, seed, int64(1<<20)+seed*9<<20/loadSessions); err != nil {
					t.Errorf("%s: session %d of a quarter: %v", server, i, err)
				}
			})
		}
		quarterDone.Wait()
		quarter := g.peakRSS(t)
		g.resetPeakRSS(t)
		var (
			mu    sync.Mutex
			lat   []time.Duration
			tolds []told
			bytes int64
			wg    sync.WaitGroup
		)
		start := time.Now()
		for i, s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				seed := int64(i + 1)
				size := int64(1<<20) + seed*9<<20/loadSessions // 1-10 MB
				t0 := time.Now()
				r, err := s.callBlob(server, seed, size)
				d := time.Since(t0)
				if err != nil {
					t.Errorf("%s: session %d: %v", server, i, err)
					return
				}
				if r.NotStored != "" {
					t.Errorf("%s: session %d: not stored: %s", server, i, tail(r.NotStored, 300))
					return
				}
				mu.Lock()
				lat = append(lat, d)
				tolds = append(tolds, r)
				bytes += size
				mu.Unlock()
			}()
		}
		wg.Wait()
		took := time.Since(start)
		if t.Failed() {
			t.FailNow()
		}
		slices.Sort(lat)
		t.Logf("%s: %d calls of 1-10 MB from %d sessions in %s: %.1f calls/s, %.0f MB/s, p50 %s, p99 %s",
			server, len(lat), loadSessions, took.Round(time.Millisecond), float64(len(lat))/took.Seconds(),
			float64(bytes)/1e6/took.Seconds(), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond))
		full := g.peakRSS(t)
		for _, r := range tolds {
			if err := readBack(r); err != nil {
				t.Errorf("%s: %v", server, err)
			}
		}
		t.Logf("%s: gateway peak RSS %d MB over %d sessions, %d MB over %d", server, quarter>>20, loadSessions/4, full>>20, loadSessions)
		if float64(full) > maxLoadGrowth*float64(quarter) {
			t.Errorf("%s: gateway peak RSS %d MB over %d sessions, over %.1f times the %d MB over %d: its memory grows with the calls",
				server, full>>20, loadSessions, maxLoadGrowth, quarter>>20, loadSessions/4)
		}
	}
	for _, s := range sessions {
		s.close()
	}
}
