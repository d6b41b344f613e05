package upstreamhttp

import (
	"errors"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
)

// heapPeak samples the bytes of heap objects (live, and garbage not yet
// swept) and keeps the most it saw.
type heapPeak struct {
	mu     sync.Mutex
	sample []metrics.Sample
	base   uint64
	peak   uint64
}

func newHeapPeak() *heapPeak {
	runtime.GC()
	p := &heapPeak{sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	metrics.Read(p.sample)
	p.base = p.sample[0].Value.Uint64()
	return p
}

func (p *heapPeak) read() {
	p.mu.Lock()
	defer p.mu.Unlock()
	metrics.Read(p.sample)
	p.peak = max(p.peak, p.sample[0].Value.Uint64())
}

// growth is the peak over the heap when sampling began.
func (p *heapPeak) growth() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(p.peak) - int64(p.base)
}

// client is an HTTP client whose response bodies sample the heap after
// each read: a reader that grows its buffer between two reads has both
// buffers counted at the next one.
func (p *heapPeak) client() *http.Client {
	return observingClient(func(int) { p.read() })
}

// TestGzipBodyPeak: a gzip body (and an SSE line) inflating to 400 MiB,
// read against a 32 MiB message cap, fails with ErrMessageTooLarge naming
// the limit, its buffer doubled up to the cap and never past it: the
// heap peaks at 1.5 times the cap (the last growth holds the old half
// and the new whole; TestGrowCapped pins it), where it peaked at 3.5
// times the cap for the body (1.9 for the SSE line) before. The bound
// allows twice the cap: every buffer the read allocated, should a busy
// machine's collector sweep none of them before the heap is sampled.
func TestGzipBodyPeak(t *testing.T) {
	const limit = 32 << 20
	s := newHostileServer(t)
	for _, tc := range []struct{ path, err string }{
		{"/gzip-400m", "reading the response: a body of more than 33554432 bytes: upstream message too large"},
		{"/gzip-400m-sse", "reading the response stream: an SSE line of more than 33554432 bytes: upstream message too large"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p := newHeapPeak()
			_, err := hostileCall(t, s, tc.path, Config{Client: p.client(), MaxMessageBytes: limit})
			if !errors.Is(err, ErrMessageTooLarge) || err.Error() != tc.err {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			g := p.growth()
			t.Logf("%s: heap peak %.1f MiB over the start for a cap of %d MiB (%.2fx)", tc.path, float64(g)/(1<<20), limit>>20, float64(g)/limit)
			if g > 2*limit+2<<20 {
				t.Errorf("heap peak %d bytes over the start, want at most 1.5 times the cap (%d) and its garbage", g, limit)
			}
		})
	}
}
