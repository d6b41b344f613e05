package jsonrpc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

// TestLineWriterConcurrent writes from 16 goroutines at once to a reader
// that takes its time: every message arrives whole, on its own line, once.
func TestLineWriterConcurrent(t *testing.T) {
	r, w := io.Pipe()
	lw := NewLineWriter(w, 0)
	const writers, each = 16, 200
	seen := map[string]int{}
	done := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 16) // small reads: writes back up
		for range writers * each {
			line, err := br.ReadString('\n')
			if err != nil {
				done <- err
				return
			}
			seen[line]++
		}
		done <- nil
	}()
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := lw.Write(fmt.Appendf(nil, `{"writer":%d,"n":%d,"pad":"%0100d"}`, g, i, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for g := range writers {
		for i := range each {
			if k := fmt.Sprintf(`{"writer":%d,"n":%d,"pad":"%0100d"}`+"\n", g, i, i); seen[k] != 1 {
				t.Fatalf("message %d of writer %d arrived %d times", i, g, seen[k])
			}
		}
	}
	// after the reader is gone, writes fail with its error
	r.Close()
	if err := lw.Write([]byte("x")); err == nil {
		t.Error("a write to a closed pipe succeeded")
	}
}

// TestLineWriterBackPressure: a peer that does not read holds writers up
// once limit bytes wait, instead of the buffer growing without bound.
func TestLineWriterBackPressure(t *testing.T) {
	r, w := io.Pipe()
	const limit = 256 << 10
	lw := NewLineWriter(w, limit)
	msg := make([]byte, 64<<10)
	for i := range msg {
		msg[i] = 'm'
	}
	const writers = 32
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lw.Write(msg); err != nil {
				t.Error(err)
			}
		}()
	}
	// one writer is stuck flushing into the pipe; the others queue until
	// the limit and then wait
	waitFor(t, "writers wait", func() bool {
		lw.mu.Lock()
		defer lw.mu.Unlock()
		return lw.waiting > 0 && lw.waiting+len(lw.buf)/len(msg)+1 == writers
	})
	if n := lw.Pending(); n > limit {
		t.Fatalf("%d bytes pending under a limit of %d", n, limit)
	}
	got := 0
	go func() { wg.Wait(); w.Close() }()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break
		}
		if len(line) != len(msg)+1 {
			t.Fatalf("a message of %d bytes arrived as %d", len(msg)+1, len(line))
		}
		got++
	}
	if got != writers {
		t.Fatalf("%d of %d messages arrived", got, writers)
	}
}

// waitFor polls cond until it holds, failing t after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

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
