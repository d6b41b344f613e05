package engine

import (
	"encoding/base64"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// TestEstimateTokensCalibrated holds EstimateTokens within 15% of a real
// tokenizer (o200k_base and cl100k_base) on prose, Go source, MCP result
// JSON with base64 inside, and base64 of random bytes.
func TestEstimateTokensCalibrated(t *testing.T) {
	t.Parallel()
	rnd := make([]byte, 30000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	samples := map[string]string{
		"prose":        read("../docs/results.md"),
		"go":           read("execute.go"),
		"result json":  read("../layers/testdata/typedcontent/everything.in.json"),
		"golden json":  read("../layers/testdata/typedcontent/everything.golden.json"),
		"base64 bytes": base64.StdEncoding.EncodeToString(rnd),
	}
	for _, name := range []tokenizer.Encoding{tokenizer.O200kBase, tokenizer.Cl100kBase} {
		enc, err := tokenizer.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range samples {
			ids, _, err := enc.Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			est := EstimateTokens([]byte(s))
			ratio := float64(est) / float64(len(ids))
			t.Logf("%s %-12s chars=%d tokens=%d estimate=%d (%.2f)", name, k, len(s), len(ids), est, ratio)
			if ratio < 0.85 || ratio > 1.15 {
				t.Errorf("%s %s: estimate %d is %.2f of the tokenizer's %d", name, k, est, ratio, len(ids))
			}
		}
	}
}

func BenchmarkEstimateTokens(b *testing.B) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = "ABCDEFGHIJ klmnop\"{}:,0123"[i%26]
	}
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		EstimateTokens(buf)
	}
}

// estimateTokensByByte is EstimateTokens one byte at a time, the
// definition the word-at-a-time pass must agree with.
func estimateTokensByByte(b []byte) int {
	var text, b64 int
	run := 0
	for _, c := range b {
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

func FuzzEstimateTokens(f *testing.F) {
	f.Add([]byte(`{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}`))
	f.Add([]byte("plain words, and some more words"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := EstimateTokens(b), estimateTokensByByte(b); got != want {
			t.Fatalf("EstimateTokens = %d, one byte at a time %d", got, want)
		}
	})
}

// BenchmarkEstimateTokensBase64: a result carrying a 10 MiB file.
func BenchmarkEstimateTokensBase64(b *testing.B) {
	raw := make([]byte, 10<<20)
	for i := range raw {
		raw[i] = byte(i * 7919 >> 3)
	}
	buf := []byte(`{"content":[{"type":"text","text":"` + base64.StdEncoding.EncodeToString(raw) + `"}]}`)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		EstimateTokens(buf)
	}
}
