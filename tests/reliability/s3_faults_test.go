//go:build reliability

package reliability

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
)

// faultyS3 stands between the s3 store and versitygw: it answers the
// first failPuts PUTs with 503 SlowDown itself (a throttled or briefly
// unavailable server), and once down is set refuses every request as a
// stopped server would.
type faultyS3 struct {
	next     http.RoundTripper
	failPuts atomic.Int32
	failed   atomic.Int32
	down     atomic.Bool
	// downAfterParts: after this many part uploads, the server stops
	downAfterParts atomic.Int32
	parts          atomic.Int32
}

func (f *faultyS3) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.down.Load() {
		return nil, &netError{syscall.ECONNREFUSED}
	}
	if r.Method == http.MethodPut && f.failPuts.Add(-1) >= 0 {
		f.failed.Add(1)
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	}
	resp, err := f.next.RoundTrip(r)
	if r.Method == http.MethodPut && r.URL.Query().Has("partNumber") && err == nil && resp.StatusCode == http.StatusOK {
		if n := f.downAfterParts.Load(); n > 0 && f.parts.Add(1) >= n {
			f.down.Store(true)
		}
	}
	return resp, err
}

type netError struct{ err error }

func (e *netError) Error() string   { return "dial tcp: " + e.err.Error() }
func (e *netError) Unwrap() error   { return e.err }
func (e *netError) Timeout() bool   { return false }
func (e *netError) Temporary() bool { return true }

func openFaulty(t *testing.T, srv *s3test.Server, bucket string) (*s3store.Store, *faultyS3) {
	t.Helper()
	f := &faultyS3{next: http.DefaultTransport.(*http.Transport).Clone()}
	st, err := s3store.Open(context.Background(), s3store.Config{Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true,
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, PartSize: 5 << 20, SinglePutBytes: 5 << 20, Transport: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st, f
}

// TestS3TransientErrorsRetried: PUTs answered 503 SlowDown (a part of a
// 12 MB multipart upload among them) are retried with backoff by the
// client (up to 10 tries, at most 1 s apart, with jitter; see
// store/s3store's bucket.go), and the artifact reads back byte-exact.
func TestS3TransientErrorsRetried(t *testing.T) {
	srv := s3test.Start(t)
	st, f := openFaulty(t, srv, srv.Bucket(t))
	ctx := context.Background()
	data := blob(7, 12<<20)
	f.failPuts.Store(3)
	start := time.Now()
	ref, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "r", Scope: store.Scope{SessionID: "s"}})
	if err != nil {
		t.Fatalf("put through %d transient 503s: %v", f.failed.Load(), err)
	}
	t.Logf("12 MB put through %d transient 503s in %s", f.failed.Load(), time.Since(start).Round(time.Millisecond))
	if f.failed.Load() != 3 {
		t.Errorf("%d PUTs failed, want 3", f.failed.Load())
	}
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d put", len(got), len(data))
	}
}

// TestS3StoppedMidPut: the S3 server stops after the first part of a
// 12 MB multipart upload: the put fails (after the client's retries)
// with an error, and once the server is back no artifact is listed, no
// object of it is left in the bucket, and the next put succeeds.
func TestS3StoppedMidPut(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	st, f := openFaulty(t, srv, bucket)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	scope := store.Scope{SessionID: "s"}
	f.downAfterParts.Store(1)
	start := time.Now()
	_, err := st.Put(ctx, bytes.NewReader(blob(8, 12<<20)), store.PutOptions{Namespace: "r", Scope: scope})
	if err == nil {
		t.Fatal("a put whose server stopped mid-upload succeeded")
	}
	t.Logf("put failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, syscall.ECONNREFUSED) && !strings.Contains(err.Error(), "refused") {
		t.Errorf("the error does not say the server refused: %v", err)
	}
	f.down.Store(false) // the server is back
	f.downAfterParts.Store(0)
	refs, _, err := st.List(ctx, scope, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 0 {
		t.Errorf("after a put cut mid-upload %d artifacts are listed: %+v", len(refs), refs)
	}
	for _, key := range srv.Keys(t, bucket, "") {
		if strings.Contains(key, "blobs/") {
			t.Errorf("object %s left in the bucket by the cut put", key)
		}
	}
	data := blob(9, 6<<20)
	ref, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "r", Scope: scope})
	if err != nil {
		t.Fatalf("put once the server is back: %v", err)
	}
	if refs, _, _ := st.List(ctx, scope, ""); len(refs) != 1 || refs[0].ID != ref.ID {
		t.Errorf("listed after the good put: %+v", refs)
	}
}
