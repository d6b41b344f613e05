package upstream

import "time"

// deadlines are the deadlines of a connection's started calls, with the
// one timer that enforces them (stdioConn.start). A timer per call (a
// context deadline) costs its setting and stopping on every call, and
// the runtime may wake a thread to watch each new one. The calls of one
// connection share one timeout, so their deadlines come in the order
// the calls start: one timer, set for the earliest and left alone by
// the answers of the calls before it, enforces them all. All methods
// are called with the connection's mu held.
type deadlines struct {
	q       []deadline // by deadline, from head on
	head    int
	timer   *time.Timer
	armedAt time.Time // when the timer fires; zero: not set (expire sets it again)
}

type deadline struct {
	id int64
	at time.Time
}

// add records that call id must be answered within timeout; fire is what
// the timer runs (stdioConn.expire).
func (d *deadlines) add(id int64, timeout time.Duration, pending map[int64]waiter, fire func()) {
	at := time.Now().Add(timeout)
	if d.head == len(d.q) {
		d.q, d.head = d.q[:0], 0
	} else if n := len(d.q) - d.head; n > 64 && n > 2*len(pending) {
		// answered calls behind one that is not yet: kept no longer
		live := d.q[:0]
		for _, e := range d.q[d.head:] {
			if _, ok := pending[e.id]; ok {
				live = append(live, e)
			}
		}
		d.q, d.head = live, 0
	}
	d.q = append(d.q, deadline{id: id, at: at})
	// A shorter timeout than the calls' before (the same for all of a
	// connection's, from its server's config): its place by deadline.
	for i := len(d.q) - 1; i > d.head && d.q[i].at.Before(d.q[i-1].at); i-- {
		d.q[i], d.q[i-1] = d.q[i-1], d.q[i]
	}
	if !d.armedAt.IsZero() && !at.Before(d.armedAt) {
		return // set for an earlier deadline: it is set again for this one then
	}
	d.armedAt = at
	if d.timer == nil {
		d.timer = time.AfterFunc(timeout, fire)
	} else {
		d.timer.Reset(timeout)
	}
}

// drop forgets the answered calls at the head.
func (d *deadlines) drop(pending map[int64]waiter) {
	for d.head < len(d.q) {
		if _, ok := pending[d.q[d.head].id]; ok {
			return
		}
		d.head++
	}
}

// expired takes the calls whose deadline has passed at now, and sets the
// timer for the next deadline, if any.
func (d *deadlines) expired(now time.Time, pending map[int64]waiter, fire func()) []int64 {
	d.armedAt = time.Time{}
	var ids []int64
	for d.head < len(d.q) && !d.q[d.head].at.After(now) {
		if _, ok := pending[d.q[d.head].id]; ok {
			ids = append(ids, d.q[d.head].id)
		}
		d.head++
	}
	d.drop(pending)
	if d.head < len(d.q) {
		d.armedAt = d.q[d.head].at
		d.timer.Reset(d.armedAt.Sub(now))
	}
	return ids
}

// stop stops the timer (the connection has ended).
func (d *deadlines) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}
