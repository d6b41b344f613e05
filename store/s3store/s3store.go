// Package s3store is an artifact store on an S3 bucket (AWS S3, MinIO,
// versitygw, Ceph RGW, R2 …), through aws-sdk-go-v2's S3 client. Every
// mcpx replica that opens the same bucket and prefix sees one store: there
// is no local index, so nothing is per replica but a short-lived cache of
// when this process last recorded a read (Config.AccessResolution).
//
// # Layout
//
// Under Config.Prefix, every key is one of:
//
//	blobs/<random>                        the bytes of one artifact
//	meta/<id>                             the artifact's record (JSON): sha256, size,
//	                                      MIME type, creation time, blob name, content summary
//	hash/<namespace>/<sha256>             the id the content has in the namespace
//	scope/<id>/<added ns>.<scope>         one per scope the artifact was put under, the
//	                                      scope in the key (base64url JSON), the file name
//	                                      and source of its latest put in the body
//	order/<created ns>.<id>.<size>.<blob> insertion order, oldest first (List)
//	rorder/<inverted ns>.<id>.<size>.<blob>  the same, newest first (ListOrder)
//	access/<id>/<ns>                      when the artifact was last read (lru)
//	text/<id>                             the text parts Annotate gave (Search)
//	gone/<id>.<blob>                      a Delete's claim: of several at once, one deletes
//
// # Writes
//
// Put streams the reader to blobs/<random>: content up to
// Config.SinglePutBytes goes in one PUT while it is hashed beside, and the
// content's record is looked up once the hash is known, before the PUT
// ends; larger content goes as a multipart upload of Config.PartSize
// parts, hashed as it goes, so memory is bounded by one part whatever the
// artifact's size. Then, named by its sha256, the artifact is recorded:
// meta/<id> is created with If-None-Match (two replicas putting the same
// bytes at once agree on one record; the loser removes its upload), then
// hash/, scope/ and the two order keys at once. An artifact is listed
// under a scope only once it has that scope's key and its order key, so
// nobody lists it before both exist; one with an order key and no scope
// (a put killed between them) is removed by Collect like any orphan.
// Delete takes the order keys first (unlisted), then hash/, scope/,
// meta/, and last the bytes.
//
// # Several replicas, several collectors
//
// Every write is a whole object and every delete idempotent, so collectors
// on several replicas may run at once: each reports what it removed
// itself. A crash between the steps above leaves objects no order key
// names; Collect removes those older than Config.OrphanGrace (in-flight
// puts are younger: Config.PutTimeout bounds them), and aborts the
// multipart uploads a killed put left open once as old. A bucket
// lifecycle rule (AbortIncompleteMultipartUpload), as S3 recommends,
// does the latter without a collector.
//
// # Slow stores
//
// Config.PutTimeout bounds a whole Put: an object store that slows to a
// trickle fails the put with ErrPutTimeout (what it wrote is removed, a
// multipart upload aborted) rather than hold the call that stores.
//
// # Costs
//
// Stat and Get make three small requests before the bytes (meta/, a
// listing of scope/<id>/ and the scope's body); List makes those per ref
// listed, in parallel. Collect and DropScope list order/, scope/ and
// access/ once each (1000 keys a request) and read no bodies. Search
// reads the text parts of the newest artifacts in scope until it has
// Config.SearchCandidates matching lines: it is a scan, not an index.
package s3store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
)

// Defaults of Config.
const (
	// DefaultPageSize is how many refs List returns per page.
	DefaultPageSize = 100
	// DefaultPartSize is the part size of a multipart upload (S3's
	// minimum is 5 MiB): a put holds at most one part in memory.
	DefaultPartSize = 16 << 20
	// DefaultSinglePutBytes is the largest artifact put in one request;
	// larger ones go multipart.
	DefaultSinglePutBytes = DefaultPartSize
	// DefaultAccessResolution is how often one process records a read of
	// one artifact (lru needs no finer clock).
	DefaultAccessResolution = time.Minute
	// DefaultOrphanGrace is how old an object no artifact names must be
	// before Collect removes it: older than any put in progress.
	DefaultOrphanGrace = time.Hour
	// DefaultSearchCandidates is how many matching lines Search ranks at
	// most: the newest, in scope.
	DefaultSearchCandidates = 5000
	// DefaultPresignExpiry is how long a presigned URL stays valid.
	DefaultPresignExpiry = 15 * time.Minute
	// DefaultPutTimeout bounds one Put, the upload and the records that
	// name it: a 1 GiB artifact at 10 MB/s fits. A store slower than
	// that (throttled, a link that trickles) fails the put with
	// ErrPutTimeout instead of holding the call.
	DefaultPutTimeout = 2 * time.Minute
	// DefaultEndpoint is AWS S3's global endpoint.
	DefaultEndpoint = "https://s3.amazonaws.com"
)

// parallel bounds the requests one List or Collect makes at once.
const parallel = 16

// Sentinel errors, wrapped with %w: match them with errors.Is.
var (
	// ErrNoBucket is returned by Open when the bucket does not exist;
	// mcpx never creates buckets.
	ErrNoBucket = errors.New("s3store: bucket not found")
	// ErrConfig is returned by Open for a configuration it cannot use.
	ErrConfig = errors.New("s3store: bad configuration")
	// ErrPutTimeout is returned by a Put that Config.PutTimeout cut: the
	// object store did not take the bytes in time. Nothing of the put is
	// listed; what it had written is removed.
	ErrPutTimeout = errors.New("the object store did not take the bytes within the put timeout")
)

// Config configures a Store. Bucket is required; every other zero field
// means its default.
//
//	cfg := s3store.Config{Endpoint: "http://127.0.0.1:7070", Bucket: "mcpx",
//		PathStyle: true, AccessKey: "…", SecretKey: "…"}
type Config struct {
	// Endpoint is the S3 server's URL, "https://host[:port]" or
	// "http://host:port" (plain HTTP: loopback and test servers only); a
	// bare "host:port" means https. Defaults to DefaultEndpoint.
	Endpoint string `json:"endpoint,omitempty"`
	// Bucket holds the artifacts; it must exist. Required.
	Bucket string `json:"bucket"`
	// Region is the bucket's region; empty asks the server (one request
	// at Open). Defaults to "".
	Region string `json:"region,omitempty"`
	// Prefix is prepended to every key, so one bucket can hold several
	// stores ("mcpx/prod"); a "/" is added when missing. Defaults to ""
	// (the bucket's root).
	Prefix string `json:"prefix,omitempty"`
	// PathStyle addresses the bucket as endpoint/bucket rather than
	// bucket.endpoint: MinIO, versitygw and most servers that are not AWS
	// want it. Defaults to false: the endpoint's style, bucket.endpoint
	// for AWS, Google Cloud Storage and Alibaba OSS, endpoint/bucket for
	// every other.
	PathStyle bool `json:"path_style,omitempty"`
	// AccessKey and SecretKey sign requests; SessionToken goes with
	// temporary credentials. Empty keys mean anonymous requests.
	AccessKey    string `json:"access_key,omitempty"`
	SecretKey    string `json:"secret_key,omitempty"`
	SessionToken string `json:"session_token,omitempty"`

	// PageSize is how many refs List returns per page; n < 1 means the
	// default. Defaults to DefaultPageSize.
	PageSize int `json:"-"`
	// IDPrefixLen is how many sha256 hex characters a new id starts
	// with. Defaults to store.DefaultIDPrefixLen.
	IDPrefixLen int `json:"-"`
	// PartSize is the part size of multipart uploads (memory per put).
	// Defaults to DefaultPartSize.
	PartSize int64 `json:"-"`
	// SinglePutBytes is the largest artifact put in one request.
	// Defaults to DefaultSinglePutBytes.
	SinglePutBytes int64 `json:"-"`
	// AccessResolution is how often this process records a read of one
	// artifact for lru. Defaults to DefaultAccessResolution.
	AccessResolution time.Duration `json:"-"`
	// OrphanGrace is how old an unreferenced object must be before
	// Collect removes it. Defaults to DefaultOrphanGrace.
	OrphanGrace time.Duration `json:"-"`
	// PutTimeout bounds one Put, upload and records together; the
	// caller's context may end it sooner. Defaults to DefaultPutTimeout.
	PutTimeout time.Duration `json:"-"`
	// SearchCandidates bounds the matching lines Search ranks. Defaults
	// to DefaultSearchCandidates.
	SearchCandidates int `json:"-"`
	// Logger receives what Collect's orphan sweep removes (info) and
	// failures of best-effort cleanups (warn). Defaults to a null logger.
	Logger hclog.Logger `json:"-"`
	// Transport carries the HTTP requests. Defaults to the SDK's
	// transport over HTTP/1.1, keeping 16 idle connections to the
	// server, with a one-minute wait for a response's headers.
	Transport http.RoundTripper `json:"-"`
}

// Store is an artifact store on an S3 bucket. It is safe for concurrent
// use, by goroutines and by other processes (replicas) that open the same
// bucket and prefix.
//
// It is the front of parts that each own one concern, built by Open and
// given the siblings they use: the bucket's requests, the records, the
// uploads, the reads recorded for lru, the blobs looked up lately, and
// the readers, writers, searcher and collector over them.
type Store struct {
	life     *openState
	bucket   *bucket
	records  *records
	recent   *recentBlobs
	access   *accessLog
	reader   *reader
	writer   *writer
	searcher *searcher
	gc       *collector
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.OrderedLister = (*Store)(nil)
	_ store.Annotator     = (*Store)(nil)
	_ store.Searcher      = (*Store)(nil)
	_ store.Collector     = (*Store)(nil)
	_ store.AccessLister  = (*Store)(nil)
)

// Open connects to the bucket cfg names and checks that it exists: one
// request, and one more before it to ask the bucket's region when
// cfg.Region is empty. Nothing is written.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("%w: no bucket", ErrConfig)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return nil, fmt.Errorf("%w: endpoint %q: want http(s)://host[:port]", ErrConfig, cfg.Endpoint)
	}
	cfg = cfg.withDefaults()
	b := &bucket{name: cfg.Bucket, prefix: cfg.Prefix, log: cfg.Logger}
	if b.prefix != "" && !strings.HasSuffix(b.prefix, "/") {
		b.prefix += "/"
	}
	b.where = "s3://" + b.name + "/" + b.prefix
	reg := cfg.Region
	if reg == "" {
		if reg, err = region(ctx, s3.New(locationOptions(cfg, u)), cfg.Bucket); err != nil {
			if errorCode(err) == "NoSuchBucket" {
				err = ErrNoBucket
			}
			return nil, fmt.Errorf("s3store: %s: %w", b.where, err)
		}
	}
	b.client = s3.New(clientOptions(cfg, u, reg))
	b.presign = s3.NewPresignClient(b.client)
	ok, err := b.check(ctx)
	if err != nil {
		return nil, fmt.Errorf("s3store: %s: %w", b.where, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3store: %s: %w", b.where, ErrNoBucket)
	}
	return newStore(cfg, b), nil
}

// newStore returns the Store of the bucket b: its parts, each given the
// defaults of cfg and the siblings it uses.
func newStore(cfg Config, b *bucket) *Store {
	log := cfg.Logger
	s := &Store{life: &openState{}, bucket: b, recent: &recentBlobs{}}
	s.records = &records{bucket: b, recent: s.recent}
	s.access = newAccessLog(b, log, cfg.AccessResolution)
	s.reader = &reader{pageSize: cfg.PageSize, life: s.life, bucket: b, records: s.records, access: s.access}
	s.writer = &writer{idPrefixLen: cfg.IDPrefixLen, putTimeout: cfg.PutTimeout, log: log, life: s.life, bucket: b,
		records: s.records, uploads: newUploader(b, log, cfg.PartSize, cfg.SinglePutBytes), access: s.access, recent: s.recent}
	s.searcher = &searcher{candidates: cfg.SearchCandidates, life: s.life, bucket: b, records: s.records}
	s.gc = &collector{orphanGrace: cfg.OrphanGrace, log: log, life: s.life, bucket: b, records: s.records, writer: s.writer}
	return s
}

// withDefaults returns c with every unset field at its default.
func (c Config) withDefaults() Config {
	c.PageSize = orDefault(c.PageSize, DefaultPageSize)
	c.IDPrefixLen = orDefault(c.IDPrefixLen, store.DefaultIDPrefixLen)
	c.SearchCandidates = orDefault(c.SearchCandidates, DefaultSearchCandidates)
	c.PartSize = orDefault(c.PartSize, DefaultPartSize)
	c.SinglePutBytes = orDefault(c.SinglePutBytes, DefaultSinglePutBytes)
	c.AccessResolution = orDefault(c.AccessResolution, DefaultAccessResolution)
	c.OrphanGrace = orDefault(c.OrphanGrace, DefaultOrphanGrace)
	c.PutTimeout = orDefault(c.PutTimeout, DefaultPutTimeout)
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

func orDefault[T int | int64 | time.Duration](v, d T) T {
	if v < 1 {
		return d
	}
	return v
}

// Where names the store: s3://bucket/prefix.
func (s *Store) Where() string { return s.bucket.where }

// Put streams r to the bucket, hashing as it goes, and records the
// artifact (see store.Store.Put and the package doc). An artifact put
// again keeps its id and first MIME type, and is listed under the name,
// source and first creation of each scope.
func (s *Store) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	return s.writer.put(ctx, r, o)
}

// Get returns a reader of the artifact's bytes (or rng of them) and its
// ref, and records the read for lru.
func (s *Store) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	return s.reader.get(ctx, id, rng)
}

// Stat returns the artifact's ref.
func (s *Store) Stat(ctx context.Context, id string) (store.Ref, error) {
	ref, _, err := s.reader.stat(ctx, id)
	if err != nil {
		return store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	return ref, nil
}

// Owned returns the artifact as owner holds it (see store.Store.Owned):
// its record and one listing of its scope keys, then the names of
// owner's.
func (s *Store) Owned(ctx context.Context, id string, owner store.Owner) ([]store.Ref, error) {
	return s.reader.owned(ctx, id, owner)
}

// InScope reports whether the artifact was put under a scope that scope
// contains: one listing of its scope keys.
func (s *Store) InScope(ctx context.Context, id string, scope store.Scope) (bool, error) {
	return s.reader.inScope(ctx, id, scope)
}

// Exists reports whether the artifact is stored.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	return s.reader.exists(ctx, id)
}

// Delete removes the artifact. Deleting one another process deleted
// first returns store.ErrNotFound.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.writer.delete(ctx, id)
}

// List returns one page of the refs whose scope scope contains, oldest
// first (see store.Store.List).
func (s *Store) List(ctx context.Context, scope store.Scope, cursor string) ([]store.Ref, string, error) {
	return s.ListOrder(ctx, scope, cursor, store.OldestFirst)
}

// ListOrder is List in either order. A cursor of one order is invalid
// in the other.
func (s *Store) ListOrder(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, string, error) {
	refs, _, next, err := s.reader.list(ctx, scope, cursor, order, false)
	return refs, next, err
}

// ListAccess is ListOrder with when each artifact was last read (or
// created, when never read).
func (s *Store) ListAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, []time.Time, string, error) {
	return s.reader.list(ctx, scope, cursor, order, true)
}

// EachAccess is ListAccess handing each row to each (see
// store.AccessLister). The records of a page are read in parallel
// batches, so each sees the rows once the page's batch is in.
func (s *Store) EachAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order, each func(store.Ref, time.Time) error) (string, error) {
	refs, access, next, err := s.reader.list(ctx, scope, cursor, order, true)
	if err != nil {
		return "", err
	}
	for i := range refs {
		if err := each(refs[i], access[i]); err != nil {
			return "", err
		}
	}
	return next, nil
}

// Annotate keeps the artifact's content summary in its record (returned
// in Ref.Content) and its text parts in text/<id> (what Search reads),
// replacing earlier ones. The record is rewritten only if unchanged since
// it was read (If-Match), so an Annotate racing a Delete cannot bring the
// record back.
func (s *Store) Annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	return s.writer.annotate(ctx, id, content, parts)
}

// Search returns the best limit lines that hold every term of query,
// among the artifacts put under a scope that scope contains. A line
// scores the sum of its terms' counts over the square root of its length.
// It stops with ctx's error when ctx ends.
func (s *Store) Search(ctx context.Context, scope store.Scope, query string, limit int) ([]store.Hit, error) {
	return s.searcher.search(ctx, scope, query, limit)
}

// Collect applies policy (see store.Collector). Each removal is reported
// by the collector whose delete found the artifact, so collectors on
// several replicas never report one twice. Unless DryRun, it then
// removes objects no artifact names that are older than
// Config.OrphanGrace.
func (s *Store) Collect(ctx context.Context, policy store.Retention, o store.CollectOptions) (store.CollectReport, error) {
	return s.gc.collect(ctx, policy, o)
}

// DropScope removes scope from every artifact put under it, and the
// artifacts left with no scope (see store.Collector).
func (s *Store) DropScope(ctx context.Context, scope store.Scope) (store.CollectReport, error) {
	return s.gc.dropScope(ctx, scope)
}

// Close marks the store closed and waits for the background removals of
// earlier access keys. It is idempotent and ignores ctx.
func (s *Store) Close(context.Context) error {
	s.access.close()
	s.life.close()
	return nil
}

// openState says whether Close ran.
type openState struct {
	mu     sync.Mutex
	closed bool
}

func (o *openState) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// usable returns ctx's error, or ErrClosed after Close.
func (o *openState) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return store.ErrClosed
	}
	return nil
}

// usableID is usable for a call on the artifact id: an id that is not
// one is store.ErrInvalidID.
func (o *openState) usableID(ctx context.Context, id string) error {
	if err := o.usable(ctx); err != nil {
		return err
	}
	if !store.ValidID(id) {
		return store.ErrInvalidID
	}
	return nil
}

func newBlobName() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nanos writes t as 20 decimal digits, so keys sort by time.
func nanos(t time.Time) string { return fmt.Sprintf("%020d", t.UnixNano()) }
