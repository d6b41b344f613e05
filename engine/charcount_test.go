package engine

import (
	"math/rand/v2"
	"testing"
)

// TestContinuationBytes: the eight-at-a-time count agrees with a byte loop
// on random bytes (valid UTF-8 or not) at every length and alignment.
func TestContinuationBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	buf := make([]byte, 300)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for start := 0; start < 9; start++ {
		for end := start; end <= len(buf); end++ {
			want := 0
			for _, c := range buf[start:end] {
				if c&0xC0 == 0x80 {
					want++
				}
			}
			if got := continuationBytes(buf[start:end]); got != want {
				t.Fatalf("[%d:%d]: %d, want %d", start, end, got, want)
			}
		}
	}
}
