package engine

// Token counts without a tokenizer: what a result costs a model, estimated
// in one pass over its bytes. Calibrated against o200k_base and
// cl100k_base (tiktoken-go/tokenizer, in tokens_test.go only, so the
// binary carries no BPE tables):
//
//	sample                      chars   o200k  chars/token
//	English prose (README.md)   35,035  9,134  3.84
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

// isB64 marks the base64 alphabet (standard and URL-safe, no padding).
var isB64 = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['+'], t['/'], t['-'], t['_'] = true, true, true, true
	return t
}()

// EstimateTokens estimates the tokens a model's tokenizer makes of b: in
// one pass, about a millisecond a megabyte.
func EstimateTokens(b []byte) int {
	var text, b64 int
	run := 0
	for _, c := range b {
		if isB64[c] {
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

// imageTokens is what a vision model charges for an image it looks at
// natively: about width×height/750 (Anthropic's published estimate).
func imageTokens(w, h int) int { return (w*h + 749) / 750 }
