package transport

import (
	"sync"
	"time"
)

// workerIdle is how long an idle worker waits for the next request
// before it exits.
const workerIdle = 10 * time.Second

// workers runs requests on goroutines that are reused: a request's
// goroutine grows its stack walking a result, and a fresh goroutine per
// request would grow (copy) it again every time. There is no limit on
// how many run at once; an idle worker takes the next request, else a new
// one starts.
type workers struct {
	tasks chan func()
	done  chan struct{}
	once  sync.Once
}

func newWorkers() *workers {
	return &workers{tasks: make(chan func()), done: make(chan struct{})}
}

// run starts f on an idle worker or a new one.
func (w *workers) run(f func()) {
	select {
	case w.tasks <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-w.tasks:
		case <-t.C:
			return
		case <-w.done:
			return
		}
	}
}

// stop lets idle workers exit; requests running finish first.
func (w *workers) stop() { w.once.Do(func() { close(w.done) }) }
