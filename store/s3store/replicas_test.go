package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

// pair opens two stores on one bucket and prefix: two replicas.
func pair(t *testing.T, cfg s3store.Config) (a, b *s3store.Store, srv *s3test.Server, bucket string) {
	srv = s3test.Start(t)
	bucket = srv.Bucket(t)
	open := func() *s3store.Store {
		c := cfg
		c.Endpoint, c.Bucket, c.PathStyle, c.Prefix = srv.Endpoint, bucket, true, "shared"
		c.AccessKey, c.SecretKey = s3test.AccessKey, s3test.SecretKey
		st, err := s3store.Open(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(context.Background()) })
		return st
	}
	return open(), open(), srv, bucket
}

// The record of an artifact is made once: the server must refuse a
// second create (If-None-Match: *), or two replicas putting the same
// bytes would each think they made it.
func TestServerRefusesSecondCreate(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	ctx := context.Background()
	create := func(body string) error {
		_, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"),
			Body: strings.NewReader(body), IfNoneMatch: aws.String("*")})
		return err
	}
	if err := create("a"); err != nil {
		t.Fatal(err)
	}
	err := create("b")
	var status interface{ HTTPStatusCode() int }
	if !errors.As(err, &status) || status.HTTPStatusCode() != http.StatusPreconditionFailed {
		t.Fatalf("second create: %v, want 412 Precondition Failed", err)
	}
}

// One replica puts, the other lists, reads, checks scope and collects;
// then two collectors at once report each removal once.
func TestTwoReplicas(t *testing.T) {
	ctx := context.Background()
	a, b, _, _ := pair(t, s3store.Config{})
	sc := store.Scope{SessionID: "s1"}
	data := storetest.RandomBytes(1, 100<<10)
	ref, err := a.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "srv", Scope: sc, Filename: "x.bin"})
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := storetest.ListAll(t, b, sc)
	if len(refs) != 1 || refs[0].ID != ref.ID || refs[0].Filename != "x.bin" {
		t.Fatalf("replica b lists %+v", refs)
	}
	if got, _ := storetest.ReadAll(t, b, ref.ID, nil); !bytes.Equal(got, data) {
		t.Fatal("replica b read other bytes")
	}
	if in, err := b.InScope(ctx, ref.ID, store.Scope{SessionID: "s2"}); in || err != nil {
		t.Fatalf("InScope(s2) on b = %v, %v", in, err)
	}
	var ids []string
	for i := range 6 {
		r, err := a.Put(ctx, bytes.NewReader(storetest.RandomBytes(uint64(10+i), 1000)), store.PutOptions{Scope: sc})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	var wg sync.WaitGroup
	reps := make([]store.CollectReport, 2)
	errs := make([]error, 2)
	for i, st := range []*s3store.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i], errs[i] = st.Collect(ctx, store.Retention{MaxArtifactsPerSession: 2, Strategy: store.StrategyFIFO}, store.CollectOptions{})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if n := reps[0].Count + reps[1].Count; n != 5 {
		t.Errorf("collectors reported %d + %d removals, want 5 in all: %+v", reps[0].Count, reps[1].Count, reps)
	}
	refs, _ = storetest.ListAll(t, a, sc)
	if len(refs) != 2 || refs[0].ID != ids[4] || refs[1].ID != ids[5] {
		t.Errorf("left %v, want the newest two %v", refs, ids[4:])
	}
}

// Content past SinglePutBytes goes multipart: it reads back whole and in
// ranges; a reader failing in the third part leaves no object behind.
func TestMultipartPut(t *testing.T) {
	ctx := context.Background()
	a, _, srv, bucket := pair(t, s3store.Config{SinglePutBytes: 1 << 20, PartSize: 5 << 20})
	data := storetest.RandomBytes(3, 12<<20+7)
	ref, err := a.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "mp"})
	if err != nil {
		t.Fatal(err)
	}
	if ref.SHA256 != storetest.SHA256Hex(data) || ref.SizeBytes != int64(len(data)) {
		t.Fatalf("ref %+v", ref)
	}
	if got, _ := storetest.ReadAll(t, a, ref.ID, nil); !bytes.Equal(got, data) {
		t.Fatal("multipart artifact read back wrong")
	}
	rng := &store.Range{Offset: 6<<20 - 3, Length: 10}
	if got, _ := storetest.ReadAll(t, a, ref.ID, rng); !bytes.Equal(got, data[rng.Offset:rng.Offset+10]) {
		t.Fatal("range across a part boundary read back wrong")
	}
	before := countKeys(t, srv, bucket, "shared/blobs/")
	boom := errors.New("upstream reset")
	_, err = a.Put(ctx, io.MultiReader(bytes.NewReader(data), errReader{boom}), store.PutOptions{Namespace: "mp"})
	if !errors.Is(err, boom) {
		t.Fatalf("failing put: %v, want %v", err, boom)
	}
	if after := countKeys(t, srv, bucket, "shared/blobs/"); after != before {
		t.Errorf("failed put left %d blobs, had %d", after, before)
	}
	if ups := srv.Uploads(t, bucket, "shared/"); len(ups) != 0 {
		t.Errorf("failed put left %d multipart uploads", len(ups))
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func countKeys(t *testing.T, srv *s3test.Server, bucket, prefix string) int {
	t.Helper()
	return len(srv.Keys(t, bucket, prefix))
}

// What a put killed half way leaves (bytes, a record, the content's
// hash key, no order key; an open multipart upload; an artifact listed
// with no scope) is removed by Collect once older than OrphanGrace, and
// not before.
func TestCollectSweepsOrphans(t *testing.T) {
	ctx := context.Background()
	a, _, srv, bucket := pair(t, s3store.Config{OrphanGrace: 300 * time.Millisecond})
	kept, err := a.Put(ctx, strings.NewReader("kept"), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"shared/blobs/0123456789abcdef0123456789abcdef", "shared/meta/srv_0123456789ab", "shared/scope/srv_0123456789ab/00000000000000000001.e30",
		"shared/hash/srv/0123456789ab" + strings.Repeat("0", 52)} {
		if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	// A put killed after its order key and before its scope key.
	unscoped, err := a.Put(ctx, strings.NewReader("unscoped"), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range srv.Keys(t, bucket, "shared/scope/"+unscoped.ID+"/") {
		if _, err := srv.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket),
		Key: aws.String("shared/blobs/fedcba9876543210fedcba9876543210")}); err != nil {
		t.Fatal(err)
	}
	uploads := func() int { return len(srv.Uploads(t, bucket, "shared/")) }
	if _, err := a.Collect(ctx, store.Retention{}, store.CollectOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, srv, bucket, "shared/blobs/"); n != 3 {
		t.Fatalf("young orphan swept: %d blobs, want 3", n)
	}
	if n := uploads(); n != 1 {
		t.Fatalf("young multipart upload aborted: %d open, want 1", n)
	}
	if n := countKeys(t, srv, bucket, "shared/order/"); n != 2 {
		t.Fatalf("young artifact without a scope removed: %d order keys, want 2", n)
	}
	time.Sleep(1500 * time.Millisecond) // S3 times have one-second resolution
	if _, err := a.Collect(ctx, store.Retention{}, store.CollectOptions{}); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string]int{"shared/blobs/": 1, "shared/meta/": 1, "shared/scope/": 1, "shared/hash/": 1, "shared/order/": 1, "shared/rorder/": 1} {
		if n := countKeys(t, srv, bucket, prefix); n != want {
			t.Errorf("%s holds %d objects after the sweep, want %d", prefix, n, want)
		}
	}
	if n := uploads(); n != 0 {
		t.Errorf("%d multipart uploads open after the sweep, want 0", n)
	}
	if got, _ := storetest.ReadAll(t, a, kept.ID, nil); string(got) != "kept" {
		t.Errorf("the live artifact reads %q", got)
	}
}

// A put the object store does not take within PutTimeout (its PUT of
// the bytes stalls) fails with ErrPutTimeout soon after, and leaves
// nothing listed or in the bucket.
func TestPutTimeout(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	stall := &stallingPuts{next: http.DefaultTransport.(*http.Transport).Clone()}
	stall.on.Store(true)
	st, err := s3store.Open(context.Background(), s3store.Config{Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true, Prefix: "p",
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, PutTimeout: 500 * time.Millisecond, Transport: stall})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	ctx := context.Background()
	sc := store.Scope{SessionID: "s"}
	for _, size := range []int{1 << 10, 20 << 20} { // one PUT, multipart
		start := time.Now()
		_, err = st.Put(ctx, bytes.NewReader(storetest.RandomBytes(uint64(size), size)), store.PutOptions{Namespace: "t", Scope: sc})
		if !errors.Is(err, s3store.ErrPutTimeout) || !strings.Contains(err.Error(), "500ms") {
			t.Fatalf("%d bytes: put through a stalled store: %v, want ErrPutTimeout naming the timeout", size, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%d bytes: the put took %s for a 500ms timeout", size, took)
		}
	}
	stall.on.Store(false)
	if refs, _ := storetest.ListAll(t, st, sc); len(refs) != 0 {
		t.Errorf("cut puts listed: %+v", refs)
	}
	if n := countKeys(t, srv, bucket, "p/"); n != 0 {
		t.Errorf("cut puts left %d objects", n)
	}
}

// stallingPuts holds every PUT of an artifact's bytes until its request
// is canceled, while on.
type stallingPuts struct {
	next http.RoundTripper
	on   atomic.Bool
}

func (s *stallingPuts) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.on.Load() && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/") {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return s.next.RoundTrip(r)
}

// A presigned URL serves the bytes, with the artifact's type and name.
func TestPresignGet(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := pair(t, s3store.Config{})
	ref, err := a.Put(ctx, strings.NewReader("%PDF-1.7 tiny"), store.PutOptions{MIMEType: "application/pdf", Filename: "r.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := a.PresignGet(ctx, ref.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Fatalf("url %s", u)
	}
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "%PDF-1.7 tiny" || resp.Header.Get("Content-Type") != "application/pdf" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "r.pdf") {
		t.Errorf("GET %s: %d %q %v", u, resp.StatusCode, body, resp.Header)
	}
	if _, err := a.PresignGet(ctx, "srv_000000000000", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PresignGet(missing) = %v", err)
	}
}

// PresignURL, the engine's path: the URL made on the replica that put
// the artifact (no request) and on the other (one) downloads the exact
// bytes with plain net/http, typed and named as asked; once expired the
// object store refuses it.
func TestPresignURL(t *testing.T) {
	ctx := context.Background()
	a, b, _, _ := pair(t, s3store.Config{})
	data := storetest.RandomBytes(5, 3<<20)
	ref, err := a.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "p"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(u string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	for name, st := range map[string]*s3store.Store{"putter": a, "other": b} {
		u, err := st.PresignURL(ctx, ref.ID, "image/png", "plot.png", time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp, body := get(u.String())
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
			t.Errorf("%s: GET %s: HTTP %d, %d bytes, want the %d put", name, u.Redacted(), resp.StatusCode, len(body), len(data))
		}
		if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); ct != "image/png" || !strings.Contains(cd, "plot.png") {
			t.Errorf("%s: Content-Type %q, Content-Disposition %q", name, ct, cd)
		}
	}
	short, err := a.PresignURL(ctx, ref.ID, "", "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	if resp, body := get(short.String()); resp.StatusCode != http.StatusForbidden || bytes.Contains(body, data[:64]) {
		t.Errorf("an expired URL: HTTP %d, want 403: %.200s", resp.StatusCode, body)
	}
	if _, err := b.PresignURL(ctx, "p_000000000000", "", "", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PresignURL(missing) = %v, want ErrNotFound", err)
	}
	if err := a.Delete(ctx, ref.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PresignURL(ctx, ref.ID, "", "", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PresignURL after Delete = %v, want ErrNotFound", err)
	}
}
