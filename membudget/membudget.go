// Package membudget is one memory budget for a whole process: work whose
// size an input chooses (a query over an artifact, an image decoded to be
// downscaled, a file inspected for its summary) reserves the bytes it may
// hold before it allocates them, and waits or fails with a clear error
// when the budget is spent. A per-call cap alone lets concurrency multiply
// it past what the machine has; one budget per process does not.
//
// A nil *Budget is no budget: every reservation succeeds at once. Hosts
// that embed the engine and share nothing with anyone may leave it nil;
// the gateway always makes one (serve.limits.max_work_bytes).
package membudget

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/mcpx-dev/mcpx/internal/humanize"
)

// Sentinel errors, wrapped by Reserve with what was asked and what the
// budget holds.
var (
	// ErrTooLarge: the work needs more than the whole budget, so it can
	// never run; it is refused at once.
	ErrTooLarge = errors.New("membudget: the work needs more memory than the whole budget")
	// ErrBusy: the budget stayed spent by other work until the caller's
	// context ended.
	ErrBusy = errors.New("membudget: the memory budget is in use by other work")
)

// MinDefault is the smallest budget Default returns: room for one query
// at query.DefaultMaxMemory.
const MinDefault int64 = 256 << 20

// DefaultFraction is the share of the machine's memory Default gives the
// budget: the rest is the process's own baseline, its store caches and
// everything else on the machine.
const DefaultFraction = 4

// Default returns a quarter of the memory this process may use (the
// cgroup's memory.max where one is set, else the machine's MemTotal), and
// at least MinDefault. It reads /proc and /sys; where neither answers it
// returns MinDefault * 4.
func Default() int64 {
	total := machineMemory()
	if total <= 0 {
		return MinDefault * DefaultFraction
	}
	return max(MinDefault, total/DefaultFraction)
}

// machineMemory is the cgroup v2 limit when lower than MemTotal, else
// MemTotal; 0 when unknown.
func machineMemory() int64 {
	var total int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				fields := strings.Fields(rest)
				if len(fields) > 0 {
					if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
						total = kb << 10
					}
				}
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
			total = v
		}
	}
	return total
}

// Budget is a process's memory budget. Its methods are safe for
// concurrent use.
type Budget struct {
	total  int64
	sem    *semaphore.Weighted
	inUse  atomic.Int64
	peak   atomic.Int64
	waited atomic.Int64
}

// New returns a budget of total bytes (Default() when total <= 0).
func New(total int64) *Budget {
	if total <= 0 {
		total = Default()
	}
	return &Budget{total: total, sem: semaphore.NewWeighted(total)}
}

// Total is the budget's size in bytes; 0 for a nil budget.
func (b *Budget) Total() int64 {
	if b == nil {
		return 0
	}
	return b.total
}

// InUse is the bytes reserved now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	return b.inUse.Load()
}

// Peak is the most bytes reserved at once since New.
func (b *Budget) Peak() int64 {
	if b == nil {
		return 0
	}
	return b.peak.Load()
}

// Waits counts the reservations that had to wait for others to finish.
func (b *Budget) Waits() int64 {
	if b == nil {
		return 0
	}
	return b.waited.Load()
}

// Reserve holds n bytes of the budget for what (a few words: "a jq
// query", "decoding a 7000x7000 PNG") and returns the function that gives
// them back; call it once the work's memory is garbage. It waits while
// other work holds the budget, until ctx ends (ErrBusy), and refuses at
// once work larger than the whole budget (ErrTooLarge). n <= 0 reserves
// nothing.
func (b *Budget) Reserve(ctx context.Context, n int64, what string) (release func(), err error) {
	if b == nil || n <= 0 {
		return func() {}, nil
	}
	if n > b.total {
		return nil, fmt.Errorf("%w: %s needs %s, over the %s budget of the whole process (serve.limits.max_work_bytes)",
			ErrTooLarge, what, humanize.Bytes(n), humanize.Bytes(b.total))
	}
	if !b.sem.TryAcquire(n) {
		b.waited.Add(1)
		if err := b.sem.Acquire(ctx, n); err != nil {
			return nil, fmt.Errorf("%w: %s needs %s and other work held %s of the %s budget until %w",
				ErrBusy, what, humanize.Bytes(n), humanize.Bytes(b.inUse.Load()), humanize.Bytes(b.total), err)
		}
	}
	return b.held(n), nil
}

// TryReserve is Reserve without waiting: ok is false when the budget does
// not have n bytes free now (or ever).
func (b *Budget) TryReserve(n int64) (release func(), ok bool) {
	if b == nil || n <= 0 {
		return func() {}, true
	}
	if n > b.total || !b.sem.TryAcquire(n) {
		return nil, false
	}
	return b.held(n), true
}

// held counts n acquired bytes and returns the function that gives them
// back, once however often it is called.
func (b *Budget) held(n int64) (release func()) {
	now := b.inUse.Add(n)
	for {
		p := b.peak.Load()
		if now <= p || b.peak.CompareAndSwap(p, now) {
			break
		}
	}
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			b.inUse.Add(-n)
			b.sem.Release(n)
		}
	}
}
