package s3store

// The bucket: the requests the store makes, through aws-sdk-go-v2's S3
// client, under Config.Prefix. The client is built directly from the
// Config (no shared AWS configuration is loaded, so nothing is read from
// ~/.aws and no instance metadata is asked at start-up): static keys, or
// anonymous requests without them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/hashicorp/go-hclog"
)

// Retries of a failed request (a 503 SlowDown, a refused connection):
// up to retryAttempts tries in all, and no client-side retry quota, so a
// server that throttles a burst of puts slows them down rather than
// fails them. Before retry n the client waits a random share of
// retryUnit doubled n times, at most retryMaxBackoff (minio-go's
// schedule): a put to a stopped server fails in about 4 s, not the 9 s
// of the SDK's own backoff capped at 1 s, which waits the cap each time.
const (
	retryAttempts   = 10
	retryUnit       = 200 * time.Millisecond
	retryMaxBackoff = time.Second
)

// backoff is the wait before retry attempt (from 1).
func backoff(attempt int, _ error) (time.Duration, error) {
	d := min(retryMaxBackoff, retryUnit<<min(attempt, 8))
	return rand.N(d + 1), nil
}

// defaultRegion signs the request that asks a bucket's region, and is
// the region of a bucket whose location is empty.
const defaultRegion = "us-east-1"

// bucket is the store's bucket and prefix. It holds no state of its
// own: the client keeps its connections.
type bucket struct {
	client  *s3.Client
	presign *s3.PresignClient
	name    string // the bucket
	prefix  string // Config.Prefix, ending in "/" (or "")
	where   string // s3://bucket/prefix
	log     hclog.Logger
}

// clientOptions returns the S3 client options of cfg for the endpoint u,
// signing for region.
func clientOptions(cfg Config, u *url.URL, region string) s3.Options {
	o := s3.Options{
		Region:       region,
		UsePathStyle: cfg.PathStyle || !virtualHosted(u, cfg.Bucket),
		Credentials:  aws.AnonymousCredentials{},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = retryAttempts
			o.MaxBackoff = retryMaxBackoff
			o.Backoff = retry.BackoffDelayerFunc(backoff)
			o.RateLimiter = ratelimit.None
		}),
		// No checksum beyond the sha256 the store computes itself: the
		// SDK would otherwise add a CRC32 pass over every upload and
		// verify one on every download.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// No "Expect: 100-continue" wait before a large body: the bytes
		// go at once, as minio-go sent them.
		ContinueHeaderThresholdBytes: -1,
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: cfg.AccessKey, SecretAccessKey: cfg.SecretKey, SessionToken: cfg.SessionToken, Source: "s3store.Config"}, nil
		})
	}
	if u.Host != awsGlobalHost || u.Scheme != "https" {
		// AWS's global endpoint is left to the SDK, which sends to the
		// bucket's regional one.
		o.BaseEndpoint = aws.String(u.Scheme + "://" + u.Host)
	}
	if cfg.Transport != nil {
		o.HTTPClient = &http.Client{Transport: cfg.Transport}
	} else {
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			// List and Collect make up to parallel requests at once:
			// keep their connections. HTTP/1.1, as S3 speaks it; a
			// server that accepts a request and never answers fails it
			// after a minute; bodies are never decoded.
			t.MaxIdleConnsPerHost = parallel
			t.ForceAttemptHTTP2 = false
			t.ResponseHeaderTimeout = time.Minute
			t.DisableCompression = true
		})
	}
	return o
}

// awsGlobalHost is the host of DefaultEndpoint.
const awsGlobalHost = "s3.amazonaws.com"

// virtualHosted reports whether requests to the endpoint u address the
// bucket as a host name (bucket.host): only on the object stores known
// to serve that (AWS, Google Cloud Storage, Alibaba OSS), and never for a
// bucket whose dots would break the TLS certificate's name. Every other
// endpoint (MinIO, versitygw, Ceph, a loopback test server) is addressed
// by path, as minio-go chose.
func virtualHosted(u *url.URL, bucket string) bool {
	if u.Scheme == "https" && strings.Contains(bucket, ".") {
		return false
	}
	h := u.Hostname()
	return h == "storage.googleapis.com" || strings.HasSuffix(h, ".aliyuncs.com") ||
		strings.HasPrefix(h, "s3") && strings.HasSuffix(h, ".amazonaws.com")
}

// locationOptions are the client options of the request that asks the
// bucket's region: to the endpoint as configured, by path, signed for
// defaultRegion, as S3 answers that question at any endpoint for a bucket
// of any region (minio-go asked it so).
func locationOptions(cfg Config, u *url.URL) s3.Options {
	o := clientOptions(cfg, u, defaultRegion)
	o.BaseEndpoint = aws.String(u.Scheme + "://" + u.Host)
	o.UsePathStyle = true
	return o
}

// region asks the server for the bucket's region. A server that will not
// say (access denied, not implemented) is taken to use defaultRegion.
func region(ctx context.Context, client *s3.Client, name string) (string, error) {
	out, err := client.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(name)})
	if err != nil {
		switch errorCode(err) {
		case "AccessDenied", "NotImplemented", "AuthorizationHeaderMalformed", "InvalidRegion":
			return defaultRegion, nil
		}
		return "", err
	}
	switch loc := string(out.LocationConstraint); loc {
	case "":
		return defaultRegion, nil
	case "EU":
		return "eu-west-1", nil
	default:
		return loc, nil
	}
}

// check asks whether the bucket exists (HEAD).
func (b *bucket) check(ctx context.Context) (bool, error) {
	_, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.name)})
	if isNotFound(err) || errorCode(err) == "NoSuchBucket" {
		return false, nil
	}
	return err == nil, err
}

// key is the object key of name under the prefix and part ("meta/").
func (b *bucket) key(part, name string) string { return b.prefix + part + name }

// getBytes reads a small object whole (at most limit bytes) and its ETag.
func (b *bucket) getBytes(ctx context.Context, key string, limit int64) ([]byte, string, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if err != nil {
		return nil, "", err
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("%s: over %d bytes", key, limit)
	}
	return data, aws.ToString(out.ETag), nil
}

// get returns a reader of n bytes of key from off; all of it when the
// range is the whole object of size bytes.
func (b *bucket) get(ctx context.Context, key string, off, n, size int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)}
	if off != 0 || n != size {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

// exists asks whether key exists (HEAD).
func (b *bucket) exists(ctx context.Context, key string) (bool, error) {
	_, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// condition makes a small PUT conditional: create writes only when the
// key does not exist (If-None-Match: *), ifMatch only when its ETag is
// still that (If-Match).
type condition struct {
	create  bool
	ifMatch string
}

// putSmall writes data, held whole, to key in one PUT signed with its
// sha256 (the SDK computes it): the server checks the bytes against it.
func (b *bucket) putSmall(ctx context.Context, key string, data []byte, contentType string, c condition) error {
	in := &s3.PutObjectInput{Bucket: aws.String(b.name), Key: aws.String(key), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data)))}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if c.create {
		in.IfNoneMatch = aws.String("*")
	}
	if c.ifMatch != "" {
		in.IfMatch = aws.String(c.ifMatch)
	}
	_, err := b.client.PutObject(ctx, in)
	return err
}

// putJSON writes v to key; with create it writes only when key does not
// exist, and created reports whether it did.
func (b *bucket) putJSON(ctx context.Context, key string, v any, create bool) (created bool, err error) {
	data, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	err = b.putSmall(ctx, key, data, "application/json", condition{create: create})
	if create && isPreconditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

func (b *bucket) putBytes(ctx context.Context, key string, data []byte) error {
	return b.putSmall(ctx, key, data, "", condition{})
}

// unsignedPayload sends a request's body unsigned (UNSIGNED-PAYLOAD):
// the bytes of an artifact are hashed once, by the store, not a second
// time to sign them (the SDK hashes every body it signs).
func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

// putBlob writes data to key in one PUT, unsigned.
func (b *bucket) putBlob(ctx context.Context, key string, data []byte) error {
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.name), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), ContentType: aws.String(blobType)}, unsignedPayload)
	return err
}

// blobType is the Content-Type of an artifact's bytes in the bucket (a
// presigned URL answers with the artifact's own).
const blobType = "application/octet-stream"

// startUpload begins a multipart upload to key and returns its id.
func (b *bucket) startUpload(ctx context.Context, key string) (string, error) {
	out, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b.name), Key: aws.String(key),
		ContentType: aws.String(blobType)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.UploadId), nil
}

// uploadPart sends part n (from 1) of the upload id, unsigned.
func (b *bucket) uploadPart(ctx context.Context, key, id string, n int32, data []byte) (types.CompletedPart, error) {
	out, err := b.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b.name), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(n), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}, unsignedPayload)
	if err != nil {
		return types.CompletedPart{}, err
	}
	return types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)}, nil
}

// completeUpload makes the upload id's parts the object key.
func (b *bucket) completeUpload(ctx context.Context, key, id string, parts []types.CompletedPart) error {
	_, err := b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(b.name), Key: aws.String(key),
		UploadId: aws.String(id), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	return err
}

// abortUpload drops the upload id and its parts; one already gone is no
// error.
func (b *bucket) abortUpload(ctx context.Context, key, id string) error {
	_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b.name), Key: aws.String(key),
		UploadId: aws.String(id)})
	if isNotFound(err) {
		return nil
	}
	return err
}

// cleanupTimeout bounds a cleanup after a failed or cut put (the
// caller's context may be over by then): an object store that does not
// answer leaves the object to a later Collect.
const cleanupTimeout = time.Minute

// remove deletes key, logging a failure (a later Collect sweeps it). It
// runs whether or not ctx has ended, for up to cleanupTimeout.
func (b *bucket) remove(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := b.removeErr(ctx, key); err != nil {
		b.log.Warn("removing an object", "key", key, "error", err)
	}
}

// removeErr deletes key; one already gone is no error.
func (b *bucket) removeErr(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if isNotFound(err) {
		return nil
	}
	return err
}

// object is one key a listing returned.
type object struct {
	key      string
	modified time.Time
}

// listing says what to list: the keys under prefix (a full key prefix)
// after startAfter, in key order, pageKeys a request (at most 1000; 0
// for the server's default).
type listing struct {
	prefix, startAfter string
	pageKeys           int
}

// list yields the keys l names, one page a request, until the caller
// stops or a request fails (yielded as the last error).
func (b *bucket) list(ctx context.Context, l listing) iter.Seq2[object, error] {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.name), Prefix: aws.String(l.prefix)}
	if l.startAfter != "" {
		in.StartAfter = aws.String(l.startAfter)
	}
	if l.pageKeys > 0 {
		in.MaxKeys = aws.Int32(int32(l.pageKeys))
	}
	return pages(ctx, s3.NewListObjectsV2Paginator(b.client, in), func(page *s3.ListObjectsV2Output) []object {
		objs := make([]object, len(page.Contents))
		for i, o := range page.Contents {
			objs[i] = object{key: aws.ToString(o.Key), modified: aws.ToTime(o.LastModified)}
		}
		return objs
	})
}

// keys lists the keys under part and prefix (below the store's prefix).
func (b *bucket) keys(ctx context.Context, part, prefix string) iter.Seq2[object, error] {
	return b.list(ctx, listing{prefix: b.key(part, prefix)})
}

// upload is one multipart upload a listing returned.
type upload struct {
	key, id   string
	initiated time.Time
}

// uploads yields the open multipart uploads of keys under prefix (a full
// key prefix).
func (b *bucket) uploads(ctx context.Context, prefix string) iter.Seq2[upload, error] {
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(b.name), Prefix: aws.String(prefix)}
	return pages(ctx, s3.NewListMultipartUploadsPaginator(b.client, in), func(page *s3.ListMultipartUploadsOutput) []upload {
		ups := make([]upload, len(page.Uploads))
		for i, u := range page.Uploads {
			ups[i] = upload{key: aws.ToString(u.Key), id: aws.ToString(u.UploadId), initiated: aws.ToTime(u.Initiated)}
		}
		return ups
	})
}

// pager is one of the SDK's paginators.
type pager[P any] interface {
	HasMorePages() bool
	NextPage(ctx context.Context, opts ...func(*s3.Options)) (P, error)
}

// pages yields the items of each page p fetches, a request a page, until
// the caller stops or a request fails (yielded as the last error).
func pages[P, T any](ctx context.Context, p pager[P], items func(P) []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items(page) {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
}

// presignGet returns a URL that GETs key until expiry passes, answering
// with contentType and disposition when not empty. Signing is local.
func (b *bucket) presignGet(ctx context.Context, key string, expiry time.Duration, contentType, disposition string) (*url.URL, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)}
	if contentType != "" {
		in.ResponseContentType = aws.String(contentType)
	}
	if disposition != "" {
		in.ResponseContentDisposition = aws.String(disposition)
	}
	req, err := b.presign.PresignGetObject(ctx, in, s3.WithPresignExpires(expiry))
	if err != nil {
		return nil, err
	}
	return url.Parse(req.URL)
}

// errorCode is the S3 error code of err ("NoSuchKey"), "" when it has
// none.
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// statusCode is the HTTP status of the response err came with, 0 when
// none.
func statusCode(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	code := errorCode(err)
	return statusCode(err) == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound" || code == "NoSuchUpload"
}

func isPreconditionFailed(err error) bool {
	if err == nil {
		return false
	}
	return statusCode(err) == http.StatusPreconditionFailed || errorCode(err) == "PreconditionFailed"
}
