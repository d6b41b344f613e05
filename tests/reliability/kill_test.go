//go:build reliability

package reliability

import (
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestGatewayKilledMidRun: 16 sessions store 0.25-2 MB blobs through a
// gateway on the fs store while it is killed with SIGKILL; a gateway
// restarted on the same store (and URL key) serves every artifact a
// client had been told about, byte-exact, and after `mcpx artifacts gc`
// `mcpx artifacts fsck` finds the store sound: no orphan blobs, nothing
// listed without its bytes.
func TestGatewayKilledMidRun(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := gatewayConfig(t, dir, addr, map[string]map[string]any{"blobs": {"instances": "pool", "pool_size": 2}, "spare": nil}, // two: tool names get the server's prefix
		map[string]any{"dir": filepath.Join(dir, "artifacts")})
	g := startGateway(t, cfg, addr)
	const clients, killAfter = 16, 40
	var (
		mu     sync.Mutex
		tolds  []told
		seed   atomic.Int64
		wg     sync.WaitGroup
		killed = make(chan struct{})
	)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := newSession(g.URL())
			if err != nil {
				t.Errorf("session %d: %v", i, err)
				return
			}
			for {
				n := seed.Add(1)
				r, err := s.callBlob("blobs", n, 256<<10+n%8*256<<10)
				if err != nil {
					select {
					case <-killed:
						return // the call the kill cut: the client was told nothing
					default:
						t.Errorf("session %d: %v", i, err)
						return
					}
				}
				mu.Lock()
				tolds = append(tolds, r)
				enough := len(tolds) == killAfter
				mu.Unlock()
				if enough {
					close(killed)
					g.kill()
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("killed the gateway with SIGKILL after %d artifacts told, %d calls started", len(tolds), seed.Load())
	startGateway(t, cfg, addr)
	for _, r := range tolds {
		if r.NotStored != "" {
			t.Errorf("seed %d not stored on a sound disk: %s", r.Seed, r.Text)
			continue
		}
		if err := readBack(r); err != nil {
			t.Errorf("after restart: %v", err)
		}
	}
	bin := mcpx(t)
	if out, err := exec.Command(bin, "artifacts", "gc", "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("artifacts gc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "artifacts", "fsck", "--config", cfg).CombinedOutput()
	if err != nil {
		t.Errorf("artifacts fsck after the kill and gc: %v\n%s", err, out)
	}
	t.Logf("fsck: %s", tail(string(out), 400))
}
