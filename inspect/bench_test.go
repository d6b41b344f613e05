package inspect

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkInspectJSON1MB is the summary of a 1 MB JSON array alone:
// line count, shape, first characters and 1 MiB of search parts.
func BenchmarkInspectJSON1MB(b *testing.B) {
	var items []string
	for i, n := 0, 0; n < 1_000_000; i++ {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":"item %d","tags":["a","b"],"note":"a note of some length for item %d"}`, i, i, i))
		n += len(items[i]) + 2
	}
	data := []byte("[" + strings.Join(items, ",\n") + "]")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, _, err := Inspect(context.Background(), bytes.NewReader(data), int64(len(data)), "application/json", Limits{})
		if err != nil || s.Length != len(items) || s.Partial != "" {
			b.Fatalf("%+v %v", s, err)
		}
	}
}
