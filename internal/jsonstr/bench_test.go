package jsonstr

import (
	"io"
	"strings"
	"testing"
)

// BenchmarkReader streams 600 KB string bodies through a 256 KiB buffer (as
// the store's copy does): snapshot-like text with an escape every dozen
// bytes, and text with none.
func BenchmarkReader(b *testing.B) {
	for _, tc := range []struct{ name, body string }{
		{"snapshot", strings.Repeat(`    - link \"Add to cart 8\" [ref=e8] [cursor=pointer]:\n      - /url: /item/8\n`, 600_000/82)},
		{"plain", strings.Repeat("lorem ipsum dolor sit amet ", 600_000/27)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body, buf := []byte(tc.body), make([]byte, 256<<10)
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{NewReader(body)}, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
