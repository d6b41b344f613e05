package s3store

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The bucket is a host name only on the object stores that serve it so
// (as minio-go chose), and AWS's global endpoint is left to the SDK,
// which sends to the bucket's regional one.
func TestAddressing(t *testing.T) {
	for _, tc := range []struct {
		endpoint, bucket string
		pathStyle        bool
		wantPath         bool
		wantBase         string
	}{
		{"https://s3.amazonaws.com", "b", false, false, ""},
		{"https://s3.eu-west-1.amazonaws.com", "b", false, false, "https://s3.eu-west-1.amazonaws.com"},
		{"https://s3.amazonaws.com", "b.with.dots", false, true, ""},
		{"https://storage.googleapis.com", "b", false, false, "https://storage.googleapis.com"},
		{"https://oss-eu-central-1.aliyuncs.com", "b", false, false, "https://oss-eu-central-1.aliyuncs.com"},
		{"http://127.0.0.1:9000", "b", false, true, "http://127.0.0.1:9000"},
		{"https://minio.example.com", "b", false, true, "https://minio.example.com"},
		{"https://s3.amazonaws.com", "b", true, true, ""},
	} {
		u, _ := url.Parse(tc.endpoint)
		o := clientOptions(Config{Bucket: tc.bucket, PathStyle: tc.pathStyle}, u, "eu-west-1")
		if o.UsePathStyle != tc.wantPath || aws.ToString(o.BaseEndpoint) != tc.wantBase {
			t.Errorf("%s, bucket %s, path_style %v: path style %v, base endpoint %q; want %v, %q",
				tc.endpoint, tc.bucket, tc.pathStyle, o.UsePathStyle, aws.ToString(o.BaseEndpoint), tc.wantPath, tc.wantBase)
		}
	}
}

// fakeS3 answers a bucket's location and HEAD, and records each
// request's method, path and signing region.
type fakeS3 struct {
	location string // the LocationConstraint, or "missing" for NoSuchBucket
	mu       sync.Mutex
	seen     []string
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	region := "unsigned"
	if i := strings.Index(auth, "Credential="); i >= 0 {
		region = strings.Split(auth[i:], "/")[2]
	}
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+region)
	f.mu.Unlock()
	if f.location == "missing" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>`))
		return
	}
	if r.URL.Query().Has("location") {
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + f.location + `</LocationConstraint>`))
	}
}

// Open without a region asks the bucket's (by path, signed for
// us-east-1), then signs for the region the server named; with one it
// asks nothing but the bucket's HEAD.
func TestOpenAsksRegion(t *testing.T) {
	f := &fakeS3{location: "eu-central-1"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cfg := Config{Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s"}
	st, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st.Close(context.Background())
	want := []string{"GET /b?location= us-east-1", "HEAD /b? eu-central-1"}
	if strings.Join(f.seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(f.seen, "\n"), strings.Join(want, "\n"))
	}
	f.seen = nil
	cfg.Region = "ap-south-1"
	if _, err := Open(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if want := "HEAD /b? ap-south-1"; strings.Join(f.seen, "\n") != want {
		t.Errorf("requests with a region: %q, want %q", f.seen, want)
	}
	f.seen = nil
	cfg.AccessKey, cfg.SecretKey = "", ""
	if _, err := Open(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if want := "HEAD /b? unsigned"; strings.Join(f.seen, "\n") != want {
		t.Errorf("requests without keys: %q, want %q (anonymous)", f.seen, want)
	}
}

func TestOpenMissingBucket(t *testing.T) {
	srv := httptest.NewServer(&fakeS3{location: "missing"})
	defer srv.Close()
	for _, region := range []string{"", "us-east-1"} {
		_, err := Open(context.Background(), Config{Endpoint: srv.URL, Bucket: "nope", Region: region, AccessKey: "k", SecretKey: "s"})
		if !errors.Is(err, ErrNoBucket) || !strings.Contains(err.Error(), "s3://nope/") {
			t.Errorf("region %q: Open of a missing bucket: %v, want ErrNoBucket naming s3://nope/", region, err)
		}
	}
}
