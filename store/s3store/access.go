package s3store

// Reads for lru: access/<id>/<ns> keys, the newest of which says when
// the artifact was last read (or put again).

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// accessLog records reads as access keys, at most one per artifact per
// Config.AccessResolution from this process, and removes the earlier
// keys in the background.
type accessLog struct {
	bucket     *bucket
	log        hclog.Logger
	resolution time.Duration // Config.AccessResolution

	cleanups sync.WaitGroup // removals of earlier access keys
	mu       sync.Mutex     // guards touched and cleaning
	touched  map[string]time.Time
	// cleaning holds the ids whose earlier access keys a goroutine is
	// removing; true asks it for one more pass. One pass at a time per id:
	// a hot artifact re-put on every call would otherwise start a listing
	// per call, each slower than the last (the replica benchmark of
	// BENCHMARKS.md: 1 GB of goroutines and a few calls a second).
	cleaning map[string]bool
}

func newAccessLog(b *bucket, log hclog.Logger, resolution time.Duration) *accessLog {
	return &accessLog{bucket: b, log: log, resolution: resolution, touched: map[string]time.Time{}, cleaning: map[string]bool{}}
}

// touch records a read of id (access/<id>/<now>) unless this process did
// within the resolution; force records a re-put regardless. The earlier
// access keys are removed. Failures are logged: a missed touch only
// makes lru a little less exact.
func (a *accessLog) touch(ctx context.Context, id string, force bool) {
	now := time.Now()
	a.mu.Lock()
	last, seen := a.touched[id]
	if !force && seen && now.Sub(last) < a.resolution {
		a.mu.Unlock()
		return
	}
	a.touched[id] = now
	a.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	key := a.bucket.key("access/", id+"/"+nanos(now))
	if err := a.bucket.putBytes(ctx, key, nil); err != nil {
		a.log.Warn("recording a read", "id", id, "error", err)
		return
	}
	// The earlier keys go in the background: lru reads the newest.
	a.mu.Lock()
	if _, busy := a.cleaning[id]; busy {
		a.cleaning[id] = true // the running pass goes once more
		a.mu.Unlock()
		return
	}
	a.cleaning[id] = false
	a.mu.Unlock()
	a.cleanups.Add(1)
	go func() {
		defer a.cleanups.Done()
		for {
			a.removeOlder(ctx, id)
			a.mu.Lock()
			if !a.cleaning[id] {
				delete(a.cleaning, id)
				a.mu.Unlock()
				return
			}
			a.cleaning[id] = false
			a.mu.Unlock()
		}
	}()
}

// removeOlder removes every access key of id but the newest (keys sort
// by time).
func (a *accessLog) removeOlder(ctx context.Context, id string) {
	prev := ""
	for obj, err := range a.bucket.keys(ctx, "access/", id+"/") {
		if err != nil {
			return
		}
		if prev != "" {
			a.bucket.remove(ctx, prev)
		}
		prev = obj.key
	}
}

// last is when id was last read or put again, else created.
func (a *accessLog) last(ctx context.Context, id string, created time.Time) (time.Time, error) {
	last := created
	for obj, err := range a.bucket.keys(ctx, "access/", id+"/") {
		if err != nil {
			return time.Time{}, err
		}
		if t, ok := parseNanos(obj.key[strings.LastIndexByte(obj.key, '/')+1:]); ok && t.After(last) {
			last = t
		}
	}
	return last, nil
}

// forget drops what this process recorded of id (deleted).
func (a *accessLog) forget(id string) {
	a.mu.Lock()
	delete(a.touched, id)
	a.mu.Unlock()
}

// close waits for the background removals and forgets every read.
func (a *accessLog) close() {
	a.cleanups.Wait()
	a.mu.Lock()
	a.touched = map[string]time.Time{}
	a.mu.Unlock()
}
