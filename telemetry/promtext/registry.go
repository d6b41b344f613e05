// Package promtext keeps counters and histograms in memory and writes
// them in the Prometheus text exposition format (version 0.0.4), with
// the Go runtime's and the process's own metrics.
//
// It exists for start-up: every process that links a package runs its
// initialisation before main. The Prometheus client library's (a
// default registry with Go and process collectors, procfs, protobuf
// descriptors) and VictoriaMetrics/metrics' (it reads cgroup and
// pressure files at init) cost more than the rest of this process's
// telemetry; this package does nothing before it is used
// (BENCHMARKS.md, "Start-up"). Its text is the client
// library's, byte for byte, for the same families (the tests compare).
package promtext

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ContentType is the exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// ErrRegistered is returned when a registry already has a family of the
// name.
var ErrRegistered = errors.New("promtext: metric family already registered")

// ErrName is returned for a metric or label name Prometheus does not
// accept.
var ErrName = errors.New("promtext: invalid name")

// Type is a metric family's type as the format names it.
type Type string

// The types this package writes.
const (
	TypeCounter   Type = "counter"
	TypeGauge     Type = "gauge"
	TypeHistogram Type = "histogram"
	TypeSummary   Type = "summary"
)

// Registry is a set of metric families, written at each scrape sorted by
// name. Safe for concurrent use.
type Registry struct {
	mu         sync.Mutex
	families   map[string]writerTo
	collectors []func(*Writer)
}

// writerTo writes one registered family (nothing when it has no series).
type writerTo interface{ writeTo(w *Writer) }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{families: map[string]writerTo{}} }

func (r *Registry) register(name string, labels []string, f writerTo) error {
	if !validName(name, true) {
		return fmt.Errorf("%w: metric %q", ErrName, name)
	}
	for _, l := range labels {
		if !validName(l, false) || l == "le" || l == "quantile" {
			return fmt.Errorf("%w: label %q of %s", ErrName, l, name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.families[name]; ok {
		return fmt.Errorf("%w: %s", ErrRegistered, name)
	}
	r.families[name] = f
	return nil
}

// Collect adds a function that writes families at each scrape (values
// read then, such as an upstream's state or the Go runtime's); they
// follow the registered families, in the order added.
func (r *Registry) Collect(write func(*Writer)) {
	r.mu.Lock()
	r.collectors = append(r.collectors, write)
	r.mu.Unlock()
}

// WriteTo writes every family in the text format.
func (r *Registry) WriteTo(out io.Writer) (int64, error) {
	r.mu.Lock()
	names := make([]string, 0, len(r.families))
	for n := range r.families {
		names = append(names, n)
	}
	fams := make([]writerTo, len(names))
	slices.Sort(names)
	for i, n := range names {
		fams[i] = r.families[n]
	}
	collectors := slices.Clone(r.collectors)
	r.mu.Unlock()
	w := &Writer{}
	for _, f := range fams {
		f.writeTo(w)
	}
	for _, c := range collectors {
		c(w)
	}
	n, err := out.Write(w.b)
	return int64(n), err
}

// ServeHTTP answers a scrape, gzipped for a scraper that accepts it
// (Prometheus does), as the client library's handler answers.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", ContentType)
	w.Header().Add("Vary", "Accept-Encoding")
	// A write error is the scraper gone: nothing to tell it.
	if !acceptsGzip(req.Header.Get("Accept-Encoding")) {
		_, _ = r.WriteTo(w)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	_, _ = r.WriteTo(zw)
	_ = zw.Close()
}

// acceptsGzip reports whether an Accept-Encoding header lists gzip with
// a quality above zero.
func acceptsGzip(h string) bool {
	for part := range strings.SplitSeq(h, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// Writer builds a scrape's text. A collector writes a family's header
// (Family) and then its samples.
type Writer struct{ b []byte }

// Family writes the HELP and TYPE lines of a family.
func (w *Writer) Family(name, help string, t Type) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = appendEscaped(w.b, help, false)
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, t...)
	w.b = append(w.b, '\n')
}

// Sample writes one sample line: name, then labels as name and value
// pairs (already sorted by name), then v.
func (w *Writer) Sample(name string, v float64, labels ...string) {
	w.b = appendSeries(w.b, name, labels, "", "")
	w.b = append(w.b, ' ')
	w.b = appendFloat(w.b, v)
	w.b = append(w.b, '\n')
}

// appendSeries appends name{labels} with an optional extra label last
// (a histogram's le, a summary's quantile).
func appendSeries(b []byte, name string, labels []string, extra, extraValue string) []byte {
	b = append(b, name...)
	if len(labels) < 2 && extra == "" {
		return b
	}
	b = append(b, '{')
	sep := false
	for i := 0; i+1 < len(labels); i += 2 {
		if sep {
			b = append(b, ',')
		}
		b = appendLabel(b, labels[i], labels[i+1])
		sep = true
	}
	if extra != "" {
		if sep {
			b = append(b, ',')
		}
		b = appendLabel(b, extra, extraValue)
	}
	return append(b, '}')
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendEscaped escapes s as the format wants: backslash and line feed
// (and double quotes in a label value). Bytes that are not UTF-8 (a
// hostile upstream's tool name) become U+FFFD, which a parser accepts.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case v != v:
		return append(b, "NaN"...)
	case v > 1.7976931348623157e308:
		return append(b, "+Inf"...)
	case v < -1.7976931348623157e308:
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// validName reports whether s is a metric (colons allowed) or label
// name of the classic Prometheus character set.
func validName(s string, metric bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' || metric && c == ':'
		if !ok {
			return false
		}
	}
	return true
}
