// Package otlphttp exports OpenTelemetry spans to an OTLP/HTTP collector
// (POST application/x-protobuf to its /v1/traces), as the OpenTelemetry
// exporter otlptracehttp does with its defaults: the standard
// OTEL_EXPORTER_OTLP_* environment, optional gzip, a 10 s timeout per
// request, retries with exponential backoff on 429, 502, 503 and 504
// (honouring Retry-After) for up to a minute.
//
// It exists for start-up: otlptracehttp links gRPC and the generated
// OTLP protobuf types, whose initialisation every process that links
// them pays before main; this package links neither (encode.go).
package otlphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/tidwall/gjson"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of Config, as otlptracehttp's.
const (
	// DefaultTimeout bounds one export request.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxResponseBytes bounds the collector's response read.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultRetryInitial is the wait before the first retry; it grows
	// 1.5 times a retry, with 50% jitter, to DefaultRetryMax.
	DefaultRetryInitial = 5 * time.Second
	// DefaultRetryMax bounds the wait between two retries.
	DefaultRetryMax = 30 * time.Second
	// DefaultRetryElapsed bounds the time an export spends retrying.
	DefaultRetryElapsed = time.Minute
)

// maxErrorBody bounds what of a failed export's response body its error
// quotes: enough for a collector's message, not a page of HTML.
const maxErrorBody = 512

// ErrShutdown is returned by an export after Shutdown.
var ErrShutdown = errors.New("otlphttp: exporter is shut down")

// Config is where and how spans are sent. FromEnv reads it from the
// standard environment.
type Config struct {
	// URL is the collector's traces URL ("http://host:4318/v1/traces").
	URL string
	// Headers are sent with every request (an API key).
	Headers map[string]string
	// Gzip compresses request bodies. Defaults to false, as the
	// OpenTelemetry exporters do.
	Gzip bool
	// Timeout bounds one request. Defaults to DefaultTimeout.
	Timeout time.Duration
	// TLS is the client's TLS configuration for an https URL (a CA, a
	// client certificate); nil is the system's roots.
	TLS *tls.Config
}

// Exporter is an sdktrace.SpanExporter that sends spans over OTLP/HTTP.
// Safe for concurrent use.
type Exporter struct {
	cfg    Config
	client *http.Client
	stop   chan struct{}
	once   sync.Once
}

// New returns an exporter that sends to c.URL.
func New(c Config) (*Exporter, error) {
	if c.URL == "" {
		return nil, errors.New("otlphttp: no collector URL")
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.TLS != nil {
		tr.TLSClientConfig = c.TLS
	}
	return &Exporter{cfg: c, client: &http.Client{Transport: tr, Timeout: c.Timeout}, stop: make(chan struct{})}, nil
}

// ExportSpans sends spans in one request, retried while the collector
// says it is busy or unavailable, until ctx ends or DefaultRetryElapsed.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case <-e.stop:
		return ErrShutdown
	default:
	}
	if len(spans) == 0 {
		return nil
	}
	body := appendRequest(nil, spans)
	if e.cfg.Gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body) // a bytes.Buffer does not fail
		_ = zw.Close()
		body = buf.Bytes()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel() // Shutdown interrupts an export in flight
		case <-ctx.Done():
		}
	}()
	_, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, e.post(ctx, body) },
		backoff.WithBackOff(&backoff.ExponentialBackOff{
			InitialInterval:     DefaultRetryInitial,
			RandomizationFactor: backoff.DefaultRandomizationFactor,
			Multiplier:          backoff.DefaultMultiplier,
			MaxInterval:         DefaultRetryMax,
		}),
		backoff.WithMaxElapsedTime(DefaultRetryElapsed))
	return err
}

// post sends body once. An error worth retrying is returned as is (with
// a backoff.RetryAfterError when the collector said when); any other is
// backoff.Permanent.
func (e *Exporter) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return backoff.Permanent(fmt.Errorf("otlphttp: %w", err))
	}
	req.Header.Set("User-Agent", "mcpx OTLP exporter")
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		err = fmt.Errorf("otlphttp: sending to %s: %w", e.cfg.URL, err)
		// a request that timed out or whose connection was reset may pass
		// on another try (otlptracehttp retries its "temporary" errors);
		// a refused connection or a bad address will not
		var ne net.Error
		if ctx.Err() == nil && (errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.ECONNRESET)) {
			return err
		}
		return backoff.Permanent(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, DefaultMaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("otlphttp: reading %s's response: %w", e.cfg.URL, err)
	}
	if len(data) > DefaultMaxResponseBytes {
		return backoff.Permanent(fmt.Errorf("otlphttp: %s's response is over %d bytes", e.cfg.URL, DefaultMaxResponseBytes))
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return backoff.Permanent(partialSuccessError(resp.Header.Get("Content-Type"), data))
	}
	msg := strings.TrimSpace(string(data))
	switch {
	case msg == "":
		msg = "(empty)"
	case len(msg) > maxErrorBody:
		msg = strings.ToValidUTF8(msg[:maxErrorBody], "") + "…"
	}
	err = fmt.Errorf("otlphttp: sending to %s: %s (body: %s)", e.cfg.URL, resp.Status, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
			return errors.Join(err, &backoff.RetryAfterError{Duration: d})
		}
		return err
	}
	return backoff.Permanent(err)
}

// partialSuccessError is the error a 2xx response reports: spans the
// collector rejected, or nil.
func partialSuccessError(contentType string, data []byte) error {
	var rejected int64
	var msg string
	switch contentType {
	case "application/x-protobuf":
		var err error
		if rejected, msg, err = partialSuccess(data); err != nil {
			return err
		}
	case "application/json":
		ps := gjson.GetBytes(data, "partialSuccess")
		rejected, msg = ps.Get("rejectedSpans").Int(), ps.Get("errorMessage").String()
	}
	if rejected == 0 && msg == "" {
		return nil
	}
	if msg == "" {
		msg = "empty message"
	}
	return fmt.Errorf("otlphttp: OTLP partial success: %s (%d spans rejected)", msg, rejected)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, int64(time.Duration(1<<63-1)/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// Shutdown stops the exporter: an export in flight is interrupted and
// later ones fail with ErrShutdown.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.once.Do(func() {
		close(e.stop)
		e.client.CloseIdleConnections()
	})
	return ctx.Err()
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)
