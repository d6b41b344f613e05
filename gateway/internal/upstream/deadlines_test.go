package upstream

import (
	"sync"
	"testing"
	"time"
)

// TestDeadlines: the shared timer fails exactly the calls still
// unanswered at their deadline, in deadline order, a shorter timeout
// included; answered calls leave nothing behind, even behind one that
// is not answered.
func TestDeadlines(t *testing.T) {
	var (
		mu      sync.Mutex
		d       deadlines
		pending = map[int64]waiter{}
		expired = make(chan []int64, 16)
	)
	var fire func()
	fire = func() {
		mu.Lock()
		ids := d.expired(time.Now(), pending, fire)
		for _, id := range ids {
			delete(pending, id)
		}
		d.drop(pending)
		mu.Unlock()
		if len(ids) > 0 {
			expired <- ids
		}
	}
	start := func(id int64, timeout time.Duration) {
		mu.Lock()
		pending[id] = waiter{}
		d.add(id, timeout, pending, fire)
		mu.Unlock()
	}
	answer := func(id int64) {
		mu.Lock()
		delete(pending, id)
		d.drop(pending)
		mu.Unlock()
	}
	queued := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(d.q) - d.head
	}
	// answered one after the other: nothing stays queued
	for id := int64(1); id <= 1000; id++ {
		start(id, time.Hour)
		answer(id)
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d deadlines queued after 1000 answered calls", n)
	}
	// one call unanswered, 10,000 answered behind it: the queue stays small
	start(5000, 300*time.Millisecond)
	for id := int64(5001); id <= 15000; id++ {
		start(id, 300*time.Millisecond)
		answer(id)
	}
	if n := queued(); n > 100 {
		t.Fatalf("%d deadlines queued behind one unanswered call", n)
	}
	// a shorter timeout behind it expires first
	start(20000, 100*time.Millisecond)
	began := time.Now()
	for _, want := range []int64{20000, 5000} {
		select {
		case ids := <-expired:
			if len(ids) != 1 || ids[0] != want {
				t.Fatalf("expired %v, want [%d]", ids, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d never expired", want)
		}
	}
	if took := time.Since(began); took < 90*time.Millisecond {
		t.Fatalf("a deadline of 100 ms passed after %s", took)
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d deadlines queued after every call ended", n)
	}
	// the timer is set again for calls after an idle spell
	start(30000, 50*time.Millisecond)
	select {
	case ids := <-expired:
		if len(ids) != 1 || ids[0] != 30000 {
			t.Fatalf("expired %v, want [30000]", ids)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call after an idle spell never expired")
	}
}
