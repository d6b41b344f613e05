package s3store_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

// holdFirstPart holds the upload of a multipart put's first part until
// the put reads past it (or a while passes), and records which came.
type holdFirstPart struct {
	next     http.RoundTripper
	readPast chan struct{}
	once     sync.Once
	overlap  atomic.Bool // the put read the next part while the first was sent
}

func (h *holdFirstPart) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "1" {
		select {
		case <-h.readPast:
			h.overlap.Store(true)
		case <-time.After(3 * time.Second):
		}
	}
	return h.next.RoundTrip(r)
}

// pastReader tells h when it is read past offset.
type pastReader struct {
	r      io.Reader
	n      int64
	offset int64
	h      *holdFirstPart
}

func (p *pastReader) Read(b []byte) (int, error) {
	if p.n >= p.offset {
		p.h.once.Do(func() { close(p.h.readPast) })
	}
	k, err := p.r.Read(b)
	p.n += int64(k)
	return k, err
}

// A multipart put reads (and hashes) the next part while it sends the
// current one: its time is the slower of the two, not their sum (100
// MiB: BENCHMARKS.md). The artifact reads back whole.
func TestMultipartReadsAhead(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	h := &holdFirstPart{next: http.DefaultTransport, readPast: make(chan struct{})}
	const part = 5 << 20
	st, err := s3store.Open(context.Background(), s3store.Config{Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true,
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, PartSize: part, SinglePutBytes: part, Transport: h})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	data := storetest.RandomBytes(9, 2*part+123)
	ref, err := st.Put(context.Background(), &pastReader{r: bytes.NewReader(data), offset: part, h: h}, store.PutOptions{Namespace: "ra"})
	if err != nil {
		t.Fatal(err)
	}
	if !h.overlap.Load() {
		t.Error("the first part was sent before the second was read: a multipart put reads and sends in turn, not at once")
	}
	if got, _ := storetest.ReadAll(t, st, ref.ID, nil); !bytes.Equal(got, data) || ref.SizeBytes != int64(len(data)) {
		t.Errorf("read back %d bytes, ref says %d; want the %d put", len(got), ref.SizeBytes, len(data))
	}
}
