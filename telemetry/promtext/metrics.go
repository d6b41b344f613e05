package promtext

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter is a monotonic count. Safe for concurrent use.
type Counter struct{ n atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds n; a negative n is ignored (a counter never decreases).
func (c *Counter) Add(n int64) {
	if n > 0 {
		c.n.Add(uint64(n))
	}
}

// Value is the count so far.
func (c *Counter) Value() uint64 { return c.n.Load() }

// Histogram counts observations into buckets by upper bound. Safe for
// concurrent use.
type Histogram struct {
	bounds []float64       // upper bounds, ascending; +Inf is implied
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf's
	sum    atomic.Uint64   // float64 bits
}

// Observe counts v in its bucket and adds it to the sum.
func (h *Histogram) Observe(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// ExponentialBuckets returns n upper bounds: start, start*factor, ….
func ExponentialBuckets(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// Counter registers a counter without labels, written even at zero.
func (r *Registry) Counter(name, help string) (*Counter, error) {
	v, err := r.CounterVec(name, help)
	if err != nil {
		return nil, err
	}
	return v.With(), nil
}

// CounterVec is a counter family with labels: one counter per set of
// label values, written once used.
type CounterVec struct{ vec[Counter] }

// CounterVec registers a counter family with the label names.
func (r *Registry) CounterVec(name, help string, labels ...string) (*CounterVec, error) {
	v := &CounterVec{newVec(name, help, TypeCounter, labels, func() *Counter { return &Counter{} }, writeCounter)}
	if len(labels) == 0 {
		v.With() // a family without labels is written from the start
	}
	return v, r.register(name, labels, v)
}

// With returns the counter of the label values, in the order the labels
// were declared.
func (v *CounterVec) With(values ...string) *Counter { return v.get(values) }

func writeCounter(w *Writer, name string, labels []string, c *Counter) {
	w.b = appendSeries(w.b, name, labels, "", "")
	w.b = append(w.b, ' ')
	w.b = appendUint(w.b, c.Value())
	w.b = append(w.b, '\n')
}

// HistogramVec is a histogram family with labels.
type HistogramVec struct{ vec[Histogram] }

// HistogramVec registers a histogram family with the buckets' upper
// bounds (ascending, finite) and the label names.
func (r *Registry) HistogramVec(name, help string, bounds []float64, labels ...string) (*HistogramVec, error) {
	for i, b := range bounds {
		if math.IsInf(b, 0) || math.IsNaN(b) || i > 0 && b <= bounds[i-1] {
			return nil, fmt.Errorf("promtext: histogram %s: bucket bounds %v: want finite and ascending", name, bounds)
		}
	}
	bounds = slices.Clone(bounds)
	les := make([]string, len(bounds))
	for i, b := range bounds {
		les[i] = string(appendFloat(nil, b))
	}
	newH := func() *Histogram { return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)} }
	write := func(w *Writer, name string, labels []string, h *Histogram) {
		var cum uint64
		for i := range h.counts {
			cum += h.counts[i].Load()
			le := "+Inf"
			if i < len(les) {
				le = les[i]
			}
			w.b = appendSeries(w.b, name+"_bucket", labels, "le", le)
			w.b = append(w.b, ' ')
			w.b = appendUint(w.b, cum)
			w.b = append(w.b, '\n')
		}
		w.Sample(name+"_sum", math.Float64frombits(h.sum.Load()), labels...)
		// the count is the buckets' total, so the two agree in a scrape
		// that races an observation
		w.b = appendSeries(w.b, name+"_count", labels, "", "")
		w.b = append(w.b, ' ')
		w.b = appendUint(w.b, cum)
		w.b = append(w.b, '\n')
	}
	v := &HistogramVec{newVec(name, help, TypeHistogram, labels, newH, write)}
	return v, r.register(name, labels, v)
}

// With returns the histogram of the label values, in the order the
// labels were declared.
func (v *HistogramVec) With(values ...string) *Histogram { return v.get(values) }

// vec is a family of series of one kind, keyed by label values.
type vec[T any] struct {
	name, help string
	typ        Type
	labels     []string // as declared
	order      []int    // indices of labels sorted by name: the written order
	newT       func() *T
	write      func(w *Writer, name string, labels []string, t *T)

	mu     sync.RWMutex
	series map[string]*series[T]
}

type series[T any] struct {
	labels []string // name, value pairs in written order
	t      *T
}

func newVec[T any](name, help string, typ Type, labels []string, newT func() *T, write func(*Writer, string, []string, *T)) vec[T] {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return labels[order[i]] < labels[order[j]] })
	return vec[T]{name: name, help: help, typ: typ, labels: slices.Clone(labels), order: order, newT: newT, write: write, series: map[string]*series[T]{}}
}

// get returns the series of values, made on first use. A call with the
// wrong number of values is a bug in the caller.
func (v *vec[T]) get(values []string) *T {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("promtext: %s takes %d label values (%s), got %d", v.name, len(v.labels), strings.Join(v.labels, ", "), len(values)))
	}
	var buf [128]byte
	key := buf[:0]
	for _, s := range values {
		key = append(key, s...)
		key = append(key, 0xff) // not in UTF-8: values cannot run together
	}
	v.mu.RLock()
	s := v.series[string(key)]
	v.mu.RUnlock()
	if s != nil {
		return s.t
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s = v.series[string(key)]; s != nil {
		return s.t
	}
	s = &series[T]{labels: make([]string, 0, 2*len(values)), t: v.newT()}
	for _, i := range v.order {
		s.labels = append(s.labels, v.labels[i], values[i])
	}
	v.series[string(key)] = s
	return s.t
}

func (v *vec[T]) writeTo(w *Writer) {
	v.mu.RLock()
	all := make([]*series[T], 0, len(v.series))
	for _, s := range v.series {
		all = append(all, s)
	}
	v.mu.RUnlock()
	if len(all) == 0 {
		return
	}
	slices.SortFunc(all, func(a, b *series[T]) int {
		for i := 1; i < len(a.labels); i += 2 {
			if c := strings.Compare(a.labels[i], b.labels[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	w.Family(v.name, v.help, v.typ)
	for _, s := range all {
		v.write(w, v.name, s.labels, s.t)
	}
}

func appendUint(b []byte, n uint64) []byte { return strconv.AppendUint(b, n, 10) }
