package engine

import (
	"sync"

	"github.com/mcpx-dev/mcpx/imageview"
)

// Token counts without a tokenizer: what a result costs a model, estimated
// in one pass over its bytes. Calibrated against o200k_base and
// cl100k_base (tiktoken-go/tokenizer, in tokens_test.go only, so the
// binary carries no BPE tables):
//
//	sample                      chars   o200k  chars/token
//	English prose (results.md)  21,698  5,690  3.81
//	design notes (markdown)     16,681  4,466  3.74
//	Go source                   18,215  5,494  3.32
//	MCP result JSON (golden)     4,837  1,470  3.29
//	random bytes as base64      40,000 27,299  1.47
//
// So a run of 64 or more base64 characters counts 2 tokens per 3
// characters, and everything else 2 tokens per 7 characters (3.5): within
// about 10% of both tokenizers on each sample (TestEstimateTokensCalibrated).

// base64Run is the length from which a run of base64 alphabet characters
// is counted as base64 rather than as words.
const base64Run = 64

// isB64 is 1 for the base64 alphabet (standard and URL-safe, no padding).
var isB64 = func() (t [256]uint8) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = 1
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = 1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 1
	}
	t['+'], t['/'], t['-'], t['_'] = 1, 1, 1, 1
	return t
}()

// EstimateTokens estimates the tokens a model's tokenizer makes of b, in
// one pass. A result that carried a 10 MiB file is 14 MB of base64, so
// the pass takes 8 bytes a step inside a run of base64 (one branch for
// eight lookups) and byte by byte elsewhere (words are short: trying 8
// at a time there costs more than it saves).
func EstimateTokens(b []byte) int {
	var text, b64 int
	run := 0
	for i := 0; i < len(b); {
		if run >= 8 && i+8 <= len(b) {
			w := b[i : i+8 : i+8]
			if isB64[w[0]]&isB64[w[1]]&isB64[w[2]]&isB64[w[3]]&isB64[w[4]]&isB64[w[5]]&isB64[w[6]]&isB64[w[7]] != 0 {
				run += 8
				i += 8
				continue
			}
		}
		c := b[i]
		i++
		if isB64[c] != 0 {
			run++
			continue
		}
		if run >= base64Run {
			b64 += run
		} else {
			text += run
		}
		run = 0
		text++
	}
	if run >= base64Run {
		b64 += run
	} else {
		text += run
	}
	return (text*2+6)/7 + (b64*2+2)/3
}

// asyncTokensMin is the size from which a result's token estimate is
// computed beside the transform rather than after it: a pass over 10 MiB
// takes milliseconds, and one over a 600 kB snapshot 0.8 ms, which then
// overlap the store's writes and fsyncs.
const asyncTokensMin = 256 << 10

// estimateTokensOf returns a function that gives EstimateTokens(b): for a
// large b it starts now on another goroutine, else it runs when called.
// b must not change until the function is called.
func estimateTokensOf(b []byte) func() int {
	if len(b) < asyncTokensMin {
		return func() int { return EstimateTokens(b) }
	}
	ch := make(chan int, 1)
	go func() { ch <- EstimateTokens(b) }()
	var n int
	var once sync.Once
	return func() int {
		once.Do(func() { n = <-ch })
		return n
	}
}

// The pixels a vision model bills for an image it looks at natively, as
// Anthropic documents it for Claude: an image whose long side is over
// imageview.DefaultMaxSide (1568) pixels, or that would cost more than
// maxImageTokens, is scaled down first; then it costs width×height/750.
const maxImageTokens = 1600

// imageTokens is what a vision model charges for a w×h image it looks at
// natively.
func imageTokens(w, h int) int {
	w, h = imageview.FitSize(w, h, imageview.DefaultMaxSide)
	return min((w*h+749)/750, maxImageTokens)
}
