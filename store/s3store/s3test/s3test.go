// Package s3test runs a real S3 server, versitygw, on loopback for tests
// of the s3 store and of what uses it. The binary comes from
// scripts/s3-tools.sh, named by $MCPX_VERSITYGW: without it a test is
// skipped, or fails under CI=true (the test command must run it).
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// EnvBinary names the versitygw binary.
const EnvBinary = "MCPX_VERSITYGW"

// Credentials of the test server's root account.
const (
	AccessKey = "mcpx-test-access"
	SecretKey = "mcpx-test-secret-key"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is its URL, http://127.0.0.1:port.
	Endpoint string
	// Dir is the folder it keeps buckets in.
	Dir    string
	client *s3.Client
	// buckets counts the buckets made, for unique names.
	buckets atomic.Int64
}

// Start runs versitygw on a free loopback port over a temp folder until t
// ends, or skips t (fails it under CI=true) when $MCPX_VERSITYGW is unset.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("$%s is not set: run scripts/s3-tools.sh (the test command does)", EnvBinary)
		}
		t.Skipf("no S3 server: set $%s to a versitygw binary (MCPX_VERSITYGW=$(./scripts/s3-tools.sh | tail -n 1))", EnvBinary)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 3 { // a free port may be taken between probe and use
		addr := freePort(t)
		// Keep-alive, as S3 servers keep connections: versitygw closes
		// each one after its answer by default, and every request of a
		// put would dial anew (8 dials for a put's 8 requests).
		cmd := exec.Command(bin, "--port", addr, "--keep-alive", "posix", data)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
		logf, err := os.Create(filepath.Join(dir, "versitygw.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
		srv := &Server{Endpoint: "http://" + addr, Dir: data}
		if lastErr = srv.wait(addr, exited); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			srv.client = s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
				Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
					return aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey}, nil
				})})
			return srv
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	log, _ := os.ReadFile(filepath.Join(dir, "versitygw.log"))
	t.Fatalf("versitygw did not start: %v\n%s", lastErr, log)
	return nil
}

func (s *Server) wait(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("exited")
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no answer on %s", addr)
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Bucket makes a new, empty bucket and returns its name.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("mcpx-test-%d-%d", os.Getpid(), s.buckets.Add(1))
	name = strings.ToLower(name)
	if _, err := s.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
	return name
}

// Client is an aws-sdk-go-v2 client of the server (path style, root
// keys).
func (s *Server) Client() *s3.Client { return s.client }

// Keys lists the keys under prefix in bucket, in key order.
func (s *Server) Keys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// Uploads lists the keys of the multipart uploads open under prefix in
// bucket.
func (s *Server) Uploads(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	pages := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list uploads %s/%s: %v", bucket, prefix, err)
		}
		for _, u := range page.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
	}
	return keys
}
