//go:build reliability

package reliability

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowProxy is a TCP proxy between mcpx and the object store that can
// be throttled: once slowAfter(n) is called, the first n bytes sent
// towards the store pass at full speed and every byte after them, on
// every connection, trickles at the set rate. Answers from the store
// pass untouched. fast lifts the throttle.
type slowProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	armed   bool
	budget  int64 // bytes still allowed at full speed once armed
	rate    int64 // bytes a second past the budget
	sent    atomic.Int64
	trickle atomic.Int64 // bytes that went at the slow rate

	wg    sync.WaitGroup
	conns sync.Map // net.Conn → struct{}
}

func startSlowProxy(t *testing.T, target string) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		p.wg.Wait()
	})
	return p
}

// Addr is where mcpx connects.
func (p *slowProxy) Addr() string { return p.ln.Addr().String() }

// slowAfter lets n more bytes through at full speed, then rate bytes a
// second.
func (p *slowProxy) slowAfter(n, rate int64) {
	p.mu.Lock()
	p.armed, p.budget, p.rate = true, n, rate
	p.mu.Unlock()
}

// fast lifts the throttle.
func (p *slowProxy) fast() {
	p.mu.Lock()
	p.armed = false
	p.mu.Unlock()
}

func (p *slowProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.conns.Store(c, struct{}{})
		p.conns.Store(up, struct{}{})
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			p.towardsStore(up, c)
			up.Close()
		}()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(c, up)
			c.Close()
			p.conns.Delete(c)
			p.conns.Delete(up)
		}()
	}
}

// towardsStore copies what mcpx sends, throttled past the budget.
func (p *slowProxy) towardsStore(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		b := buf[:n]
		for len(b) > 0 {
			k, wait := p.take(len(b))
			if wait > 0 {
				time.Sleep(wait)
			}
			if _, werr := dst.Write(b[:k]); werr != nil {
				return
			}
			p.sent.Add(int64(k))
			b = b[k:]
		}
		if err != nil {
			return
		}
	}
}

// take returns how many of n bytes may go now and how long to wait
// before sending them.
func (p *slowProxy) take(n int) (int, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return n, 0
	}
	if p.budget > 0 {
		k := min(int64(n), p.budget)
		p.budget -= k
		return int(k), 0
	}
	// Slices of a twentieth of a second's worth.
	k := min(int64(n), max(p.rate/20, 1))
	p.trickle.Add(k)
	return int(k), time.Duration(k) * time.Second / time.Duration(p.rate)
}
