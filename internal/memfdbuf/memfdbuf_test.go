//go:build linux

package memfdbuf

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func writeTemp(t *testing.T, data []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func testData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('A' + i%26)
	}
	return b
}

// TestReadFileAndView: ReadFile gives the file's bytes from its offset and
// leaves the offset past them; a View shows a run of them between a head
// and a tail its caller writes, which leave the read bytes as they were,
// at any alignment.
func TestReadFileAndView(t *testing.T) {
	data := testData(3*os.Getpagesize() + 123)
	f := writeTemp(t, data)
	if _, err := f.Seek(7, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	mb, err := ReadFile(f, int64(len(data)-7))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mb.Release(); err != nil {
			t.Error(err)
		}
	}()
	buf := mb.Bytes()
	if !bytes.Equal(buf, data[7:]) {
		t.Fatal("ReadFile returned other bytes")
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != int64(len(data)) {
		t.Errorf("offset after ReadFile %d, want %d", pos, len(data))
	}
	for _, tc := range []struct{ off, end, before, after int }{
		{0, len(buf), 0, 0},
		{10, 4000, 10, 3},
		{4095, 4097, 2, 2},
		{5000, len(buf) - 1, 700, 1},
		{1, 2, 1, 0},
	} {
		v, ok := mb.View(buf, tc.off, tc.end, tc.before, tc.after)
		if !ok {
			t.Fatalf("View%+v: false", tc)
		}
		if len(v) != tc.before+tc.end-tc.off+tc.after {
			t.Fatalf("View%+v: %d bytes", tc, len(v))
		}
		if !bytes.Equal(v[tc.before:tc.before+tc.end-tc.off], buf[tc.off:tc.end]) {
			t.Fatalf("View%+v: the middle is not the run", tc)
		}
		copy(v, bytes.Repeat([]byte{'{'}, tc.before))
		copy(v[tc.before+tc.end-tc.off:], bytes.Repeat([]byte{'}'}, tc.after))
		if !bytes.Equal(buf, data[7:]) {
			t.Fatalf("View%+v: writing the head and tail changed the read bytes", tc)
		}
		if !bytes.Equal(v[tc.before:tc.before+tc.end-tc.off], buf[tc.off:tc.end]) {
			t.Fatalf("View%+v: the middle changed", tc)
		}
	}
	for _, tc := range []struct{ off, end, before, after int }{
		{10, 20, 11, 0},      // head before the first byte
		{10, len(buf), 0, 1}, // tail past the last
		{20, 10, 0, 0},       // empty run
		{-1, 10, 0, 0},       // out of range
	} {
		if _, ok := mb.View(buf, tc.off, tc.end, tc.before, tc.after); ok {
			t.Errorf("View%+v: true, want false", tc)
		}
	}
	if _, ok := mb.View(bytes.Clone(buf), 0, 10, 0, 0); ok {
		t.Error("View of a heap copy: true, want false")
	}
	// The pages wholly inside a view's middle are read-only.
	v, ok := mb.View(buf, 100, len(buf)-100, 3, 3)
	if !ok {
		t.Fatal("View: false")
	}
	if !faults(func() { v[2*os.Getpagesize()] = 'x' }) {
		t.Error("a write inside the middle of a view did not fault")
	}
	if faults(func() { v[0], v[len(v)-1] = '{', '}' }) {
		t.Error("a write to the head and tail of a view faulted")
	}
	var none *Buffer
	if _, ok := none.View(buf, 0, 10, 0, 0); ok {
		t.Error("View of no buffer: true, want false")
	}
}

// faults reports whether f faults on a memory access.
func faults(f func()) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { faulted = recover() != nil }()
	f()
	return false
}

// TestReadFileChanged: a file whose size is not the one given (it changed
// since its Stat) is ErrUnsupported, its offset left for the caller.
func TestReadFileChanged(t *testing.T) {
	data := testData(10000)
	f := writeTemp(t, data)
	for _, size := range []int64{int64(len(data)) + 1, int64(len(data)) - 1, 0} {
		if _, err := ReadFile(f, size); !errors.Is(err, ErrUnsupported) {
			t.Errorf("size %d of %d bytes: %v, want ErrUnsupported", size, len(data), err)
		}
		if pos, _ := f.Seek(0, io.SeekCurrent); pos != 0 {
			t.Errorf("size %d: offset %d after the refusal, want 0", size, pos)
		}
	}
}
