//go:build unix

package jsonrpc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLineWriterTryWrite: TryWrite never waits for a peer that does not
// read, on an OS pipe (written through its non-blocking descriptor) as
// on an io.Pipe (written by a goroutine): what the pipe does not take
// waits in the buffer, up to the limit, past which TryWrite refuses;
// once the peer reads, every message arrives whole, in order, once.
func TestLineWriterTryWrite(t *testing.T) {
	osPipe := func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return r, w
	}
	ioPipe := func(*testing.T) (io.ReadCloser, io.WriteCloser) { return io.Pipe() }
	for name, pipe := range map[string]func(*testing.T) (io.ReadCloser, io.WriteCloser){"os.Pipe": osPipe, "io.Pipe": ioPipe} {
		t.Run(name, func(t *testing.T) {
			r, w := pipe(t)
			defer r.Close()
			const limit = 1 << 20
			lw := NewLineWriter(w, limit)
			if _, isFile := w.(*os.File); isFile && lw.raw == nil {
				t.Fatal("an os.Pipe's write end is not written through its descriptor")
			}
			queued := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					msg := fmt.Appendf(nil, `{"n":%d,"pad":"%01000d"}`, queued, queued)
					ok, err := lw.TryWrite(msg)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						return
					}
					queued++
				}
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("TryWrite waited for a peer that does not read")
			}
			if n := lw.Pending(); n > limit {
				t.Fatalf("%d bytes pending under a limit of %d", n, limit)
			}
			if queued < limit/1024 {
				t.Fatalf("TryWrite refused after %d messages of 1 KiB under a limit of %d", queued, limit)
			}
			br := bufio.NewReader(r)
			for i := range queued {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf(`{"n":%d,"pad":"%01000d"}`+"\n", i, i); line != want {
					t.Fatalf("message %d: %.40q, want %.40q", i, line, want)
				}
			}
			// a peer gone: TryWrite reports the write error
			r.Close()
			waitFor(t, "the write error", func() bool {
				_, err := lw.TryWrite([]byte("x"))
				return err != nil
			})
		})
	}
}

// TestPipeReader: a reader of an OS pipe's non-blocking end reads what is
// written, in pieces as it comes, waits for more while there is none,
// and ends with io.EOF once the writer closes.
func TestPipeReader(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr := NewPipeReader(r)
	if _, raw := pr.(*pipeReader); !raw {
		t.Fatal("an os.Pipe's read end is not read through its descriptor")
	}
	got := make(chan string, 1)
	go func() {
		b, err := io.ReadAll(pr)
		if err != nil {
			t.Error(err)
		}
		got <- string(b)
	}()
	var want strings.Builder
	for i := range 100 {
		line := fmt.Sprintf(`{"n":%d,"pad":"%0500d"}`+"\n", i, i)
		want.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // the reader waits for more
		}
	}
	w.Close()
	select {
	case s := <-got:
		if s != want.String() {
			t.Fatalf("read %d bytes, want the %d written", len(s), want.Len())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the reader did not end after the writer closed")
	}
	if rr := NewPipeReader(strings.NewReader("x")); rr == nil {
		t.Fatal("no reader for a reader without a descriptor")
	} else if _, raw := rr.(*pipeReader); raw {
		t.Fatal("a strings.Reader was taken for a descriptor")
	}
}
