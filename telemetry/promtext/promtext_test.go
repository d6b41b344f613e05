package promtext_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpx-dev/mcpx/telemetry/promtext"
)

func parse(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, b)
	}
	return fams
}

// The Go runtime's and the process's families are those of the
// Prometheus client library's Go and process collectors: the same
// names, types and help texts, each with a sample.
func TestRuntimeFamiliesMatchClientLibrary(t *testing.T) {
	ref := prometheus.NewRegistry()
	ref.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	want, err := ref.Gather()
	if err != nil {
		t.Fatal(err)
	}
	reg := promtext.NewRegistry()
	reg.Collect(promtext.WriteRuntime)
	srv := httptest.NewServer(reg)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != promtext.ContentType {
		t.Errorf("Content-Type %q", ct)
	}
	got := parse(t, body.Bytes())
	for _, w := range want {
		g := got[w.GetName()]
		switch {
		case g == nil:
			t.Errorf("%s missing", w.GetName())
		case g.GetType() != w.GetType() || g.GetHelp() != w.GetHelp():
			t.Errorf("%s: %v %q, want %v %q", w.GetName(), g.GetType(), g.GetHelp(), w.GetType(), w.GetHelp())
		case len(g.Metric) != len(w.Metric):
			t.Errorf("%s: %d samples, want %d", w.GetName(), len(g.Metric), len(w.Metric))
		}
		delete(got, w.GetName())
	}
	if len(got) > 0 {
		t.Errorf("families the client library does not write: %v", slices.Sorted(maps.Keys(got)))
	}
	if v := parse(t, body.Bytes())["go_goroutines"].Metric[0].GetGauge().GetValue(); v < 2 {
		t.Errorf("go_goroutines %v", v)
	}
}

// Counters and histograms updated from many goroutines while being
// scraped end with every update counted, and each scrape's histogram

// The gauges the client library sources from runtime/metrics hold what
// runtime/metrics reads, also when the process has changed them.
func TestGoSourcedMatchRuntimeMetrics(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(3 << 30))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}, {Name: "/sched/gomaxprocs:threads"}}
	metrics.Read(samples)
	reg := promtext.NewRegistry()
	reg.Collect(promtext.WriteRuntime)
	rec := httptest.NewRecorder()
	reg.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	fams := parse(t, rec.Body.Bytes())
	for i, name := range []string{"go_gc_gogc_percent", "go_gc_gomemlimit_bytes", "go_sched_gomaxprocs_threads"} {
		want := float64(samples[i].Value.Uint64())
		if f := fams[name]; f == nil || f.Metric[0].GetGauge().GetValue() != want {
			t.Errorf("%s: %v, want %v", name, f, want)
		}
	}
}

// count equals its +Inf bucket.
func TestConcurrentUpdatesAndScrapes(t *testing.T) {
	reg := promtext.NewRegistry()
	calls, err := reg.CounterVec("calls_total", "Calls.", "tool", "server")
	if err != nil {
		t.Fatal(err)
	}
	lat, err := reg.HistogramVec("latency_seconds", "Latency.", promtext.ExponentialBuckets(0.001, 2, 4), "tool")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				calls.With(fmt.Sprint("t", i%3), "s").Inc()
				lat.With(fmt.Sprint("t", w%2)).Observe(float64(i%10) / 1000)
			}
		})
	}
	for done := false; !done; {
		done = waitTimeout(&wg)
		var b bytes.Buffer
		if _, err := reg.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		for _, m := range parse(t, b.Bytes())["latency_seconds"].GetMetric() {
			h := m.GetHistogram()
			if n := len(h.Bucket); n != 5 {
				t.Fatalf("%d buckets, want 4 and +Inf", n)
			}
			if inf := h.Bucket[4].GetCumulativeCount(); inf != h.GetSampleCount() {
				t.Fatalf("+Inf bucket %d, count %d", inf, h.GetSampleCount())
			}
			if done && h.GetSampleCount() != workers/2*each {
				t.Errorf("latency count %d, want %d", h.GetSampleCount(), workers/2*each)
			}
		}
		if done {
			fams := parse(t, b.Bytes())
			var total float64
			for _, m := range fams["calls_total"].Metric {
				total += m.GetCounter().GetValue()
			}
			if total != workers*each || len(fams["calls_total"].Metric) != 3 {
				t.Errorf("calls %v over %d series, want %d over 3", total, len(fams["calls_total"].Metric), workers*each)
			}
		}
	}
}

// waitTimeout reports whether wg is done, waiting a moment.
func waitTimeout(wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func TestRegistrationErrors(t *testing.T) {
	reg := promtext.NewRegistry()
	if _, err := reg.CounterVec("a_total", "A."); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		do   func() error
	}{
		{"duplicate", promtext.ErrRegistered, func() error { _, err := reg.Counter("a_total", "Again."); return err }},
		{"bad metric name", promtext.ErrName, func() error { _, err := reg.Counter("1a", "."); return err }},
		{"bad label name", promtext.ErrName, func() error { _, err := reg.CounterVec("b_total", ".", "se-rver"); return err }},
		{"reserved label", promtext.ErrName, func() error { _, err := reg.HistogramVec("c", ".", []float64{1}, "le"); return err }},
	} {
		if err := c.do(); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	if _, err := reg.HistogramVec("d", ".", []float64{2, 1}); err == nil {
		t.Error("descending buckets accepted")
	}
}

// Help text and label values are escaped as the format wants, so a
// parser reads back exactly what was written.
func TestEscaping(t *testing.T) {
	reg := promtext.NewRegistry()
	v, err := reg.CounterVec("x_total", "Help with \\ and\nline.", "v")
	if err != nil {
		t.Fatal(err)
	}
	values := []string{`q"uote`, `back\slash`, "line\nfeed", "tab\tand ünïcode", ""}
	for _, s := range values {
		v.With(s).Add(3)
	}
	var b bytes.Buffer
	_, _ = reg.WriteTo(&b)
	fam := parse(t, b.Bytes())["x_total"]
	if fam.GetHelp() != "Help with \\ and\nline." {
		t.Errorf("help %q", fam.GetHelp())
	}
	var got []string
	for _, m := range fam.Metric {
		if m.GetCounter().GetValue() != 3 {
			t.Errorf("%v = %v", m.Label, m.GetCounter().GetValue())
		}
		got = append(got, m.Label[0].GetValue())
	}
	if slices.Sort(values); !slices.Equal(got, values) {
		t.Errorf("label values %q, want %q", got, values)
	}
}

// A call with the label values already seen allocates nothing.
func TestWithAllocatesNothing(t *testing.T) {
	reg := promtext.NewRegistry()
	v, _ := reg.CounterVec("y_total", ".", "server", "tool")
	v.With("up", "pic")
	if n := testing.AllocsPerRun(100, func() { v.With("up", "pic").Inc() }); n != 0 {
		t.Errorf("%v allocations a call", n)
	}
}

// A scraper that accepts gzip gets the text gzipped; one that does not,
// or refuses it with q=0, gets it plain.
func TestScrapeGzip(t *testing.T) {
	reg := promtext.NewRegistry()
	c, _ := reg.Counter("z_total", "Z.")
	c.Add(41)
	srv := httptest.NewServer(reg)
	defer srv.Close()
	for _, ae := range []string{"gzip", "deflate, gzip;q=1.0, *;q=0.5", "", "identity", "gzip;q=0"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Accept-Encoding", ae)
		resp, err := srv.Client().Transport.RoundTrip(req) // no transparent gunzip
		if err != nil {
			t.Fatal(err)
		}
		var rd io.Reader = resp.Body
		gz := resp.Header.Get("Content-Encoding") == "gzip"
		if gz {
			if rd, err = gzip.NewReader(resp.Body); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := io.ReadAll(rd)
		resp.Body.Close()
		wantGz := ae == "gzip" || strings.Contains(ae, "gzip;q=1")
		if gz != wantGz || !strings.Contains(string(b), "z_total 41\n") {
			t.Errorf("Accept-Encoding %q: gzip %v, body %q", ae, gz, b)
		}
	}
}
