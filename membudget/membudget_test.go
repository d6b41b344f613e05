package membudget

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReserveWaitsAndReleases(t *testing.T) {
	b := New(100)
	r1, err := b.Reserve(context.Background(), 60, "first")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.InUse(); got != 60 {
		t.Fatalf("in use %d, want 60", got)
	}
	if _, ok := b.TryReserve(50); ok {
		t.Fatal("TryReserve(50) succeeded with 40 free")
	}
	got := make(chan error, 1)
	go func() {
		r2, err := b.Reserve(context.Background(), 50, "second")
		if err == nil {
			r2()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second reservation did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r1()
	r1() // a second call gives nothing back twice
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if b.InUse() != 0 {
		t.Fatalf("in use %d after both released", b.InUse())
	}
	if b.Peak() != 60 || b.Waits() != 1 {
		t.Fatalf("peak %d waits %d, want 60 and 1", b.Peak(), b.Waits())
	}
}

func TestReserveRefusesAndTimesOut(t *testing.T) {
	b := New(1 << 20)
	_, err := b.Reserve(context.Background(), 2<<20, "a 2 MiB decode")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "a 2 MiB decode needs 2.1 MB, over the 1.0 MB budget") {
		t.Fatalf("err = %v, want ErrTooLarge naming the work and both sizes", err)
	}
	hold, _ := b.Reserve(context.Background(), 1<<20, "holder")
	defer hold()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = b.Reserve(ctx, 1, "a query")
	if !errors.Is(err, ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrBusy wrapping the deadline", err)
	}
}

func TestNilBudgetIsUnlimited(t *testing.T) {
	var b *Budget
	r, err := b.Reserve(context.Background(), 1<<40, "anything")
	if err != nil {
		t.Fatal(err)
	}
	r()
	if b.Total() != 0 || b.InUse() != 0 {
		t.Fatal("a nil budget reports a size")
	}
}

// TestNeverOverTotal: however many reservations race, what is held never
// passes the total.
func TestNeverOverTotal(t *testing.T) {
	b := New(1000)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(100 + i*7%300)
			r, err := b.Reserve(context.Background(), n, "work")
			if err != nil {
				t.Error(err)
				return
			}
			if b.InUse() > b.Total() {
				t.Errorf("in use %d over total %d", b.InUse(), b.Total())
			}
			r()
		}()
	}
	wg.Wait()
	if b.Peak() > b.Total() {
		t.Fatalf("peak %d over total %d", b.Peak(), b.Total())
	}
}

func TestDefault(t *testing.T) {
	if d := Default(); d < MinDefault {
		t.Fatalf("Default() = %d, under MinDefault", d)
	}
}
