package b64

import (
	"io"
	"strings"
	"testing"

	"github.com/segmentio/asm/base64"
)

// TestURLSafeSlashWorkaround pins the check in plainStep: segmentio/asm's
// SIMD URL-safe decoder decodes '/' as if it were '_', so a '/' in URL-safe
// data would decode silently on the fast path. If the first check fails,
// the library has changed: the workaround may go.
func TestURLSafeSlashWorkaround(t *testing.T) {
	long := strings.Repeat("AB_c", 4096)
	src := []byte(long[:8000] + "ab/c" + long[8004:])
	dst := make([]byte, len(src)/4*3)
	if n, err := base64.RawURLEncoding.Decode(dst, src); err != nil || n != len(dst) {
		t.Fatalf("segmentio/asm's URL-safe decoder now refuses '/' (%d, %v): review plainStep's check", n, err)
	}
	const want = `b64: invalid character '/' in URL-safe data at offset 8002`
	if _, err := Parse(src); err == nil || err.Error() != want {
		t.Fatalf("Parse: %v, want %s", err, want)
	}
	for _, chunk := range []int{4, 64, 4096, defaultChunk} {
		r, err := newReaderSize(src, chunk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err == nil || err.Error() != want {
			t.Fatalf("chunk %d: %v, want %s", chunk, err, want)
		}
	}
}
