package gateway

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"testing"
)

// TestLineWriterConcurrent writes from 16 goroutines at once to a reader
// that takes its time: every message arrives whole, on its own line, once.
func TestLineWriterConcurrent(t *testing.T) {
	r, w := io.Pipe()
	lw := newLineWriter(w, 0)
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
				if err := lw.write(fmt.Appendf(nil, `{"writer":%d,"n":%d,"pad":"%0100d"}`, g, i, i)); err != nil {
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
	if err := lw.write([]byte("x")); err == nil {
		t.Error("a write to a closed pipe succeeded")
	}
}
