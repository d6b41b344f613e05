package s3store_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
)

// slowAccessLists counts listings of access/ keys and makes each slow,
// as a bucket with many keys or a loaded server does.
type slowAccessLists struct{ n atomic.Int64 }

func (l *slowAccessLists) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Query().Get("prefix"), "access/") {
		l.n.Add(1)
		time.Sleep(300 * time.Millisecond)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A hot artifact re-put on every call (the replicas benchmark's: an icon
// in every result) runs one access-key cleanup at a time, not one listing
// per put: 64 re-puts while listings are slow make a few listings, and
// the newest access key is the one left.
func TestAccessCleanupCoalesces(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	lists := &slowAccessLists{}
	st, err := s3store.Open(context.Background(), s3store.Config{Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true, Prefix: "p",
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Transport: lists})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("the same icon, again and again")
	var id string
	for range 64 {
		ref, err := st.Put(context.Background(), bytes.NewReader(data), store.PutOptions{Namespace: "srv", Scope: store.Scope{SessionID: "s"}})
		if err != nil {
			t.Fatal(err)
		}
		id = ref.ID
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := lists.n.Load(); n > 32 { // one per put before; a pass per few puts now
		t.Errorf("64 re-puts listed access keys %d times; want a few (one cleanup at a time)", n)
	}
	if keys := srv.Keys(t, bucket, "p/access/"+id+"/"); len(keys) != 1 {
		t.Errorf("access keys left: %v, want the newest only", keys)
	}
}
