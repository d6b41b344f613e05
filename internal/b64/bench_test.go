package b64

import (
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/segmentio/asm/base64"
)

const benchSize = 10 << 20 // decoded bytes

func benchInput(b *testing.B, st style) ([]byte, []byte) {
	b.Helper()
	want := randBytes(rand.New(rand.NewPCG(1, 1)), benchSize)
	return want, st.encode(want)
}

// BenchmarkFloor is segmentio/asm's decoder on the plain input with its output
// buffer allocated once: the floor the Reader is measured against.
func BenchmarkFloor(b *testing.B) {
	_, raw := benchInput(b, styles["std"])
	dst := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := base64.StdEncoding.Decode(dst, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRead decodes raw through a reused Reader into a 32 KiB buffer, as
// io.Copy would without WriteTo.
func benchRead(b *testing.B, raw []byte) {
	var r Reader
	buf := make([]byte, 32<<10)
	_ = r.Reset(raw)
	_, _ = r.WriteTo(io.Discard) // allocate the buffers outside the timing
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := r.Reset(raw); err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			m, err := r.Read(buf)
			n += m
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if n != benchSize {
			b.Fatalf("decoded %d bytes", n)
		}
	}
}

// benchWriteTo decodes raw through a reused Reader's WriteTo.
func benchWriteTo(b *testing.B, raw []byte) {
	var r Reader
	_ = r.Reset(raw)
	_, _ = r.WriteTo(io.Discard) // allocate the buffers outside the timing
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := r.Reset(raw); err != nil {
			b.Fatal(err)
		}
		if n, err := r.WriteTo(io.Discard); err != nil || n != benchSize {
			b.Fatal(n, err)
		}
	}
}

func benchParse(b *testing.B, raw []byte) {
	_, _ = Parse(raw) // fill the pool outside the timing
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if info, err := Parse(raw); err != nil || info.DecodedLen != benchSize {
			b.Fatal(info, err)
		}
	}
}

func BenchmarkReadPlain(b *testing.B) { _, raw := benchInput(b, styles["std"]); benchRead(b, raw) }
func BenchmarkWriteToPlain(b *testing.B) {
	_, raw := benchInput(b, styles["std"])
	benchWriteTo(b, raw)
}
func BenchmarkReadGitHub(b *testing.B) { _, raw := benchInput(b, styles["github"]); benchRead(b, raw) }
func BenchmarkWriteToGitHub(b *testing.B) {
	_, raw := benchInput(b, styles["github"])
	benchWriteTo(b, raw)
}
func BenchmarkReadPHP(b *testing.B) {
	_, raw := benchInput(b, styles["php slashes"])
	benchRead(b, raw)
}
func BenchmarkParsePlain(b *testing.B) { _, raw := benchInput(b, styles["std"]); benchParse(b, raw) }
func BenchmarkParseGitHub(b *testing.B) {
	_, raw := benchInput(b, styles["github"])
	benchParse(b, raw)
}

func BenchmarkLooks(b *testing.B) {
	_, raw := benchInput(b, styles["github"])
	b.ReportAllocs()
	for b.Loop() {
		if !Looks(raw, 1000) {
			b.Fatal("Looks = false")
		}
	}
}

func BenchmarkDecodeHead(b *testing.B) {
	_, raw := benchInput(b, styles["github"])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeHead(raw, 4096); err != nil {
			b.Fatal(err)
		}
	}
}
