package s3store_test

// Put and get MB/s against aws-sdk-go-v2's own PutObject/GetObject of the
// same bytes on the same versitygw (the floor; s3test runs it with
// keep-alive, as S3 servers keep connections), and the cost of a
// presigned URL. B/op shows memory flat in the artifact's size (one
// part).
//
//	MCPX_VERSITYGW=$(./scripts/s3-tools.sh | tail -n 1) \
//	  go test ./store/s3store -run '^$' -bench . -benchtime 5x

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

var benchSizes = []int{10 << 20, 100 << 20}

func benchStore(b *testing.B) (*s3store.Store, *s3test.Server, string) {
	srv := s3test.Start(b)
	bucket := srv.Bucket(b)
	st, err := s3store.Open(context.Background(), s3store.Config{Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true,
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Prefix: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close(context.Background()) })
	return st, srv, bucket
}

func BenchmarkPut(b *testing.B) {
	st, _, _ := benchStore(b)
	ctx := context.Background()
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			data := storetest.RandomBytes(1, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				copy(data, fmt.Sprintf("%016d", i)) // new content each time
				ref, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := st.Delete(ctx, ref.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkFloorPut is the SDK's PutObject of the same bytes in one
// request, size known, as the SDK sends it by default: the payload
// signed (hashed once more) and a CRC32 checksum beside.
func BenchmarkFloorPut(b *testing.B) { benchFloorPut(b) }

// BenchmarkFloorPutUnsigned is the SDK's PutObject with the payload
// unsigned and no checksum, as mcpx sends artifacts: the floor without
// the second pass of hashing.
func BenchmarkFloorPutUnsigned(b *testing.B) {
	benchFloorPut(b, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	})
}

// benchFloorPut puts new bytes of each size with the SDK's PutObject.
func benchFloorPut(b *testing.B, opts ...func(*s3.Options)) {
	_, srv, bucket := benchStore(b)
	ctx := context.Background()
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			data := storetest.RandomBytes(1, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				copy(data, fmt.Sprintf("%016d", i))
				if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("floor"),
					Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(n))}, opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	st, _, _ := benchStore(b)
	ctx := context.Background()
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			ref, err := st.Put(ctx, bytes.NewReader(storetest.RandomBytes(2, n)), store.PutOptions{Namespace: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				rc, _, err := st.Get(ctx, ref.ID, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
		})
	}
}

// BenchmarkFloorGet is the SDK's GetObject of the same bytes.
func BenchmarkFloorGet(b *testing.B) {
	_, srv, bucket := benchStore(b)
	ctx := context.Background()
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			data := storetest.RandomBytes(2, n)
			if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("floor"),
				Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(n))}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				obj, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("floor")})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, obj.Body); err != nil {
					b.Fatal(err)
				}
				obj.Body.Close()
			}
		})
	}
}

// BenchmarkPresign: PresignGet (a stat, then signing); PresignURL, what
// an artifact ref's url costs with store.s3.presign_urls, on the replica
// that put the artifact (signing only) and on another (the record, then
// signing); and the signing alone.
func BenchmarkPresign(b *testing.B) {
	st, srv, bucket := benchStore(b)
	ctx := context.Background()
	ref, err := st.Put(ctx, bytes.NewReader([]byte("presign me")), store.PutOptions{Filename: "a.txt", MIMEType: "text/plain"})
	if err != nil {
		b.Fatal(err)
	}
	other, err := s3store.Open(ctx, s3store.Config{Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true,
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Prefix: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close(ctx)
	b.Run("PresignURL/putter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.PresignURL(ctx, ref.ID, ref.MIMEType, "a.txt", time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PresignURL/other", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s3store.ForgetRecent(other)
			if _, err := other.PresignURL(ctx, ref.ID, ref.MIMEType, "a.txt", time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PresignGet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.PresignGet(ctx, ref.ID, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SignOnly", func(b *testing.B) {
		presign := s3.NewPresignClient(srv.Client())
		b.ReportAllocs()
		for b.Loop() {
			if _, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("bench/blobs/x")},
				s3.WithPresignExpires(time.Minute)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
