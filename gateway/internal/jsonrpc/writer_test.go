package jsonrpc

import (
	"bufio"
	"fmt"
	"io"
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
