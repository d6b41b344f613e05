package query

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpx-dev/mcpx/inspect"
	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// Every mode reserves what it may hold from the process's memory budget
// before it allocates, and gives it back when it is done: concurrent
// queries wait for each other instead of each taking its own cap.
func TestRunReservesMemory(t *testing.T) {
	st := memstore.New(memstore.Config{})
	ctx := context.Background()
	text := put(t, st, "text/plain", numberedLines(100))
	js := put(t, st, "application/json", []byte(`{"a":[1,2,3]}`))
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("a.txt")
	w.Write([]byte("alpha\n"))
	zw.Close()
	arc := put(t, st, "application/zip", zb.Bytes())
	pdf := put(t, st, "application/pdf", buildPDF([][]string{{"One."}}))
	b := Budget{}.withDefaults()
	for _, c := range []struct {
		name string
		req  Request
		ref  store.Ref
		want int64
	}{
		{"lines", Request{Lines: &Range{1, 2}}, text, 2 * readBuffer},
		{"bytes", Request{Bytes: &Range{0, 10}}, text, 3 * int64(b.textLimit())},
		{"grep", Request{Grep: "line 5"}, text, 4 * readBuffer},
		{"json", Request{JSON: "a"}, js, 2 * js.SizeBytes},
		{"page", Request{Page: 1}, pdf, inspect.DefaultMaxBytes},
		{"entry", Request{Entry: "a.txt"}, arc, b.maxInput() + readBuffer},
	} {
		mem := membudget.New(1 << 30)
		if _, err := Run(ctx, st, c.ref, c.req, Budget{Memory: mem}); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if mem.Peak() != c.want || mem.InUse() != 0 {
			t.Errorf("%s: reserved %d (%d left), want %d and none left", c.name, mem.Peak(), mem.InUse(), c.want)
		}
	}
}

// A query waits while other work holds the budget, until its deadline,
// and then says so; one that needs more than the whole budget is refused
// at once. It runs in a synctest bubble, whose clock moves only while
// every goroutine in it waits: the wait is the deadline's however loaded
// the machine.
func TestRunWaitsForMemory(t *testing.T) {
	synctest.Test(t, testRunWaitsForMemory)
}

func testRunWaitsForMemory(t *testing.T) {
	st := memstore.New(memstore.Config{})
	text := put(t, st, "text/plain", numberedLines(100))
	mem := membudget.New(8 << 20)
	hold, err := mem.Reserve(context.Background(), 8<<20, "other work")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Run(context.Background(), st, text, Request{Grep: "line"}, Budget{Memory: mem, Timeout: 200 * time.Millisecond})
	want := "query: over budget: membudget: the memory budget is in use by other work: a grep query needs 4.2 MB and other work held 8.4 MB of the 8.4 MB budget until context deadline exceeded; try again shortly"
	if !errors.Is(err, ErrBudget) || !errors.Is(err, membudget.ErrBusy) || err.Error() != want {
		t.Errorf("held budget: %v\nwant %s", err, want)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 2*time.Second {
		t.Errorf("waited %v, want the 200ms deadline", took)
	}
	hold()
	if a, err := Run(context.Background(), st, text, Request{Grep: "^line 7 "}, Budget{Memory: mem}); err != nil || a.Text != "7:line 7 says hello" {
		t.Errorf("after release: %+v %v", a, err)
	}
	_, err = Run(context.Background(), st, text, Request{Lines: &Range{1, 2}}, Budget{Memory: membudget.New(1 << 20)})
	if !errors.Is(err, ErrBudget) || !errors.Is(err, membudget.ErrTooLarge) || !strings.HasSuffix(err.Error(), "; ask for less (lines, grep)") {
		t.Errorf("over the whole budget: %v", err)
	}
}

// A line longer than grep's buffer grows it, each step reserved before it
// is allocated (the old buffer is held while it is copied).
func TestRunGrepLongLineReserves(t *testing.T) {
	st := memstore.New(memstore.Config{})
	long := put(t, st, "text/plain", []byte("short\n"+strings.Repeat("x", 10<<20)+"needle\nend\n"))
	mem := membudget.New(1 << 30)
	a, err := Run(context.Background(), st, long, Request{Grep: "needle"}, Budget{Memory: mem})
	if err != nil || a.Total != 1 || !strings.Contains(a.Text, "xneedle") {
		t.Fatalf("%.80q %v", a.Text, err)
	}
	// 4 MiB, then 4+8 while growing to 8, then 8+16 while growing to 16
	if want := int64(24 << 20); mem.Peak() != want || mem.InUse() != 0 {
		t.Errorf("reserved %d (%d left), want %d", mem.Peak(), mem.InUse(), want)
	}
}

// Context lines are held until they are shown: more than an answer can
// show is refused instead of kept.
func TestRunGrepContextCap(t *testing.T) {
	st := memstore.New(memstore.Config{})
	text := put(t, st, "text/plain", numberedLines(100))
	_, err := Run(context.Background(), st, text, Request{Grep: "line 50 ", Context: 1_000_000_000}, Budget{})
	want := "query: bad request: context 1,000,000,000 is over the 3,233 lines an answer of 10,000 characters shows; ask for fewer"
	if !errors.Is(err, ErrBadRequest) || err.Error() != want {
		t.Errorf("context 1e9: %v\nwant %s", err, want)
	}
}
