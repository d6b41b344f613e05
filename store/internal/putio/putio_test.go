package putio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

func TestCopy(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 100000) // 1 MB: several buffers
	h := sha256.Sum256(data)
	cases := []struct {
		name    string
		max     int64
		wantErr error
	}{
		{"no limit", 0, nil},
		{"limit equal", int64(len(data)), nil},
		{"limit one short", int64(len(data)) - 1, store.ErrTooLarge},
		{"small limit", 10, store.ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			n, sum, err := Copy(context.Background(), &out, iotest.HalfReader(bytes.NewReader(data)), tc.max)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Copy error %v, want %v", err, tc.wantErr)
				}
				if int64(out.Len()) > tc.max {
					t.Errorf("wrote %d bytes past the %d limit", out.Len(), tc.max)
				}
				return
			}
			if err != nil || n != int64(len(data)) || sum != hex.EncodeToString(h[:]) || !bytes.Equal(out.Bytes(), data) {
				t.Errorf("Copy = %d, %s, %v", n, sum, err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Copy(ctx, &bytes.Buffer{}, strings.NewReader("x"), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Copy with a cancelled context: %v", err)
	}
	errW := errors.New("disk full")
	if _, _, err := Copy(context.Background(), failWriter{errW}, strings.NewReader("x"), 0); !errors.Is(err, errW) {
		t.Errorf("Copy to a failing writer: %v", err)
	}
	if _, _, err := Copy(context.Background(), &bytes.Buffer{}, iotest.TimeoutReader(strings.NewReader(strings.Repeat("x", 1<<20))), 0); !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("Copy from a failing reader: %v", err)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// countingWriter counts its Write calls.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

// TestCopyWritesWholeBuffers: a reader that returns one byte per Read (a
// JSON string unescaped run by run did) still costs one write per buffer.
func TestCopyWritesWholeBuffers(t *testing.T) {
	data := bytes.Repeat([]byte(`- link "Sign in" [ref=e4]`+"\n"), 2*BufferSize/26+100)
	var out countingWriter
	n, sum, err := Copy(context.Background(), &out, iotest.OneByteReader(bytes.NewReader(data)), 0)
	h := sha256.Sum256(data)
	if err != nil || n != int64(len(data)) || sum != hex.EncodeToString(h[:]) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("Copy = %d, %s, %v", n, sum, err)
	}
	if want := (len(data) + BufferSize - 1) / BufferSize; out.writes != want {
		t.Errorf("%d writes for %d bytes, want %d", out.writes, len(data), want)
	}
	// Data and EOF together, and a reader that fails after data.
	out = countingWriter{}
	if n, _, err := Copy(context.Background(), &out, iotest.DataErrReader(strings.NewReader("abc")), 0); err != nil || n != 3 || out.String() != "abc" {
		t.Errorf("data with EOF: %d, %q, %v", n, out.String(), err)
	}
	errR := errors.New("upstream gone")
	if _, _, err := Copy(context.Background(), &out, io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errR)), 0); !errors.Is(err, errR) {
		t.Errorf("failing reader after data: %v", err)
	}
}

// TestCopyHashesBeside: streams of one buffer and more (past pipeAfter
// hashed on another goroutine) give the bytes and their sha256 at every
// length around the buffer's; a writer or reader that fails, or a context
// cancelled, part way through a long stream stops the copy with its error
// and leaves no goroutine behind.
func TestCopyHashesBeside(t *testing.T) {
	data := make([]byte, (pipeAfter+4)*BufferSize+7)
	for i := range data {
		data[i] = byte(i*31 + i>>11)
	}
	for _, size := range []int{0, 1, BufferSize - 1, BufferSize, BufferSize + 1, 2 * BufferSize, pipeAfter * BufferSize, pipeAfter*BufferSize + 1, (pipeAfter+1)*BufferSize + 5, len(data)} {
		var out bytes.Buffer
		n, sum, err := Copy(context.Background(), &out, iotest.HalfReader(bytes.NewReader(data[:size])), 0)
		h := sha256.Sum256(data[:size])
		if err != nil || n != int64(size) || sum != hex.EncodeToString(h[:]) || !bytes.Equal(out.Bytes(), data[:size]) {
			t.Fatalf("%d bytes: Copy = %d, %s, %v; want sha256 %x", size, n, sum, err, h)
		}
	}
	before := runtime.NumGoroutine()
	errW := errors.New("disk full")
	for after := range pipeAfter + 4 {
		w := &failAfter{left: after, err: errW}
		if _, _, err := Copy(context.Background(), w, bytes.NewReader(data), 0); !errors.Is(err, errW) {
			t.Errorf("writer failing after %d buffers: %v", after, err)
		}
	}
	errR := errors.New("upstream gone")
	for _, after := range []int{1, pipeAfter + 2} {
		r := io.MultiReader(bytes.NewReader(data[:after*BufferSize+1]), iotest.ErrReader(errR))
		if _, _, err := Copy(context.Background(), io.Discard, r, 0); !errors.Is(err, errR) {
			t.Errorf("reader failing after %d buffers: %v", after, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cw := &failAfter{left: after, onFail: cancel}
		if _, _, err := Copy(ctx, cw, bytes.NewReader(data), 0); !errors.Is(err, context.Canceled) {
			t.Errorf("context cancelled after %d buffers: %v", after, err)
		}
		if _, _, err := Copy(context.Background(), io.Discard, bytes.NewReader(data), int64(after*BufferSize)); !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("over the limit after %d buffers: %v", after, err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the failed copies, %d before", g, before)
	}
}

// failAfter accepts left writes, then fails with err (or, with onFail,
// calls it and accepts the rest).
type failAfter struct {
	left   int
	err    error
	onFail func()
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.left > 0 {
		f.left--
		return len(p), nil
	}
	if f.onFail != nil {
		f.onFail()
		return len(p), nil
	}
	return 0, f.err
}
