package jsonrpc

import "testing"

// GrowCapped doubles a buffer up to exactly the cap, so that a growth
// holds at most 1.5 times the cap (the old buffer and the new one), for
// caps of any size.
func TestGrowCapped(t *testing.T) {
	for _, limit := range []int64{100, 512, 1000, 64 << 10, 100_000_007, 128 << 20} {
		var b []byte
		grows := 0
		for n := 1; int64(n) <= limit; n = cap(b) + 1 {
			old := cap(b)
			b = GrowCapped(b[:cap(b)], n, limit)
			grows++
			if int64(cap(b)) > limit || cap(b) < n || int64(old+cap(b)) > limit*3/2 {
				t.Fatalf("cap %d: grew from %d to %d for %d bytes", limit, old, cap(b), n)
			}
		}
		if int64(cap(b)) != limit {
			t.Errorf("cap %d: ends at %d", limit, cap(b))
		}
		t.Logf("cap %d: %d growths", limit, grows)
	}
}
