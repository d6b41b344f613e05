package fsstore

import (
	"sync"
	"time"
)

// writeLock orders this process's write transactions (SQLite has one
// writer at a time): goroutines queue here instead of in SQLite's
// sleeping busy handler. The writes of calls (Put, Annotate, Delete, ...)
// take it with Lock and go first. The search indexer takes it with
// lockBackground, which waits while a call writes or waits to (see
// enter), and asks yield between its batches, so that it commits what it
// wrote and lets the call in: a call never waits for more than one
// INSERT of the indexer, nor shares the disk and the CPU with it while
// it stores a result (see indexer.go). The zero value is unlocked.
type writeLock struct {
	mu      sync.Mutex
	cond    sync.Cond // on mu: broadcast when held, waiting or busy drops
	held    bool
	waiting int       // writers blocked in Lock
	busy    int       // puts and annotations under way (enter, leave)
	idle    time.Time // when busy last dropped to 0
}

// indexQuiet is how long after the last put or annotation the indexer
// waits before it writes: the engine stores a result with a put, reads
// it back for its summary and annotates it, and the indexer should not
// slip in between.
const indexQuiet = 10 * time.Millisecond

func (l *writeLock) init() {
	if l.cond.L == nil {
		l.cond.L = &l.mu
	}
}

// Lock takes the lock ahead of the indexer.
func (l *writeLock) Lock() {
	l.mu.Lock()
	l.init()
	l.waiting++
	for l.held {
		l.cond.Wait()
	}
	l.waiting--
	l.held = true
	l.mu.Unlock()
}

// Unlock releases the lock.
func (l *writeLock) Unlock() {
	l.mu.Lock()
	l.init()
	l.held = false
	l.cond.Broadcast()
	l.mu.Unlock()
}

// enter marks a put or an annotation as under way, until leave.
func (l *writeLock) enter() {
	l.mu.Lock()
	l.busy++
	l.mu.Unlock()
}

func (l *writeLock) leave() {
	l.mu.Lock()
	l.init()
	if l.busy--; l.busy == 0 {
		l.idle = time.Now()
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// lockBackground takes the lock once no writer holds it or waits for it
// and, unless urgent says otherwise (it is asked again whenever the lock
// wakes), no put or annotation has been under way for indexQuiet.
func (l *writeLock) lockBackground(urgent func() bool) { l.await(urgent, true) }

// waitQuiet returns when lockBackground would take the lock.
func (l *writeLock) waitQuiet(urgent func() bool) { l.await(urgent, false) }

func (l *writeLock) await(urgent func() bool, take bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	for {
		u := urgent()
		if l.held || l.waiting > 0 || !u && l.busy > 0 {
			l.cond.Wait()
			continue
		}
		if wait := indexQuiet - time.Since(l.idle); !u && wait > 0 {
			t := time.AfterFunc(wait, l.wake)
			l.cond.Wait()
			t.Stop()
			continue
		}
		l.held = l.held || take
		return
	}
}

// wake makes lockBackground and waitQuiet look again (urgent may have
// changed).
func (l *writeLock) wake() {
	l.mu.Lock()
	l.init()
	l.cond.Broadcast()
	l.mu.Unlock()
}

// yield reports whether the holder of lockBackground should commit and
// let others in: a writer waits or, unless urgent, a put or an
// annotation is under way.
func (l *writeLock) yield(urgent func() bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting > 0 || l.busy > 0 && !urgent()
}
