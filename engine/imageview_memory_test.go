//go:build !race

// The race detector's shadow memory and its random drops from sync.Pool
// (which the scaler's band buffers live in) distort what these tests
// measure; scripts/test.sh runs them without it.

package engine_test

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/internal/imagetest"
	"github.com/mcpx-dev/mcpx/membudget"
)

// procStatus reads a kB field of /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestConcurrentImageViewsStayInTheBudget: twelve 4000x3000 16-bit PNGs
// (96 MB each decoded; a view holds 144 MB with its scaling and
// encoding) reach the engine at once for a client that takes images,
// with a 320 MiB budget: two views run at a time; the eight calls that
// may wait 60 s all get their view in turn, and the four that may wait
// 1 ms, sent while two views run, are referenced only with the sentence
// saying why. Every result comes back, the budget never holds more than
// its total, and the process's heap and resident memory grow by no more
// than the budget and 64 MiB (measured: 263 and 269 MiB; 490 and 533
// MiB before a view collected the garbage of the view before it).
func TestConcurrentImageViewsStayInTheBudget(t *testing.T) {
	const waiting, hurried, need = 8, 4, 144_019_968
	mem := membudget.New(320 << 20)
	var refused []engine.Event
	eng := viewEngine(t, mem, &refused)
	in := imageResult(imagetest.PNG(4000, 3000, imagetest.RGBA, 16))

	runtime.GC()
	heapNow := func() int64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	baseHeap := heapNow()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
	baseRSS := procStatus(t, "VmRSS")
	var peakHeap int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peakHeap = max(peakHeap, heapNow())
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	results := make([]gjson.Result, waiting+hurried)
	var wg sync.WaitGroup
	call := func(i int, wait int64) {
		wg.Go(func() {
			res, err := eng.Transform(context.Background(), viewCall(imageview.Limits{MaxWaitMS: wait}), in)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = gjson.ParseBytes(res.Raw)
		})
	}
	for i := range waiting {
		call(i, 60_000)
	}
	for deadline := time.Now().Add(30 * time.Second); mem.InUse() < 2*need; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the views hold %d bytes of the budget, want two views' worth (%d)", mem.InUse(), 2*need)
		}
	}
	for i := range hurried {
		call(waiting+i, 1)
	}
	wg.Wait()
	close(stop)
	<-sampled
	peakRSS := procStatus(t, "VmHWM")

	const why = "\nNo image view: decoding this 4000x3000 16-bit PNG takes 144.0 MB, and other work held all but "
	for i, r := range results {
		text := r.Get(`content.#(type=="text").text`).String()
		if i < waiting && (r.Get("content.0.type").String() != "image" || !strings.Contains(text, "The image above is a 1568x1176 copy")) ||
			i >= waiting && (r.Get("content.0.type").String() != "text" || !strings.Contains(text, why) || !strings.HasSuffix(text, " for the 1ms a view waits; call the tool again for an image view.")) {
			t.Errorf("result %d: %.400s", i, r.Raw)
		}
	}
	t.Logf("budget %d MiB, peak %d MiB, %d waits; heap +%d MiB, RSS +%d MiB", mem.Total()>>20, mem.Peak()>>20, mem.Waits(), (peakHeap-baseHeap)>>20, (peakRSS-baseRSS)>>20)
	// One image view refused per hurried call. A summary of the image's
	// artifact may be refused too, when it asks while two views hold the
	// budget (how often is the machine's timing): its call still answers,
	// checked above.
	views := 0
	for _, ev := range refused {
		switch {
		case strings.HasPrefix(ev.Error, "image view: "):
			views++
		case !strings.HasPrefix(ev.Error, "content summary: "):
			t.Errorf("work_refused event for %q, want only image views and summaries", ev.Error)
		}
	}
	if views != hurried {
		t.Errorf("%d image views refused (%d work_refused events), want %d", views, len(refused), hurried)
	}
	if mem.Peak() > mem.Total() || mem.Peak() < 2*need || mem.InUse() != 0 {
		t.Errorf("the budget's peak is %d of %d, %d in use after; want two views' worth at once, never more than the total, none after", mem.Peak(), mem.Total(), mem.InUse())
	}
	if margin := int64(64 << 20); peakHeap-baseHeap > mem.Total()+margin || peakRSS-baseRSS > mem.Total()+margin {
		t.Errorf("the heap grew by %d and RSS by %d bytes; want at most the budget (%d) and %d", peakHeap-baseHeap, peakRSS-baseRSS, mem.Total(), margin)
	}
}
