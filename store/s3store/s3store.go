// Package s3store is an artifact store on an S3 bucket (AWS S3, MinIO,
// versitygw, Ceph RGW, R2 …), through github.com/minio/minio-go/v7. Every
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
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
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

	"github.com/hashicorp/go-hclog"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sync/errgroup"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
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
	// want it. Defaults to false (the server's style, detected).
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
	// Transport carries the HTTP requests. Defaults to minio-go's.
	Transport http.RoundTripper `json:"-"`
}

// Store is an artifact store on an S3 bucket. It is safe for concurrent
// use, by goroutines and by other processes (replicas) that open the same
// bucket and prefix.
type Store struct {
	client *minio.Client
	core   minio.Core
	bucket string
	prefix string
	where  string

	pageSize, idPrefixLen, candidates  int
	partSize, singlePut                int64
	accessRes, orphanGrace, putTimeout time.Duration
	log                                hclog.Logger

	recent   recentBlobs    // the blobs of artifacts put or read lately (PresignURL)
	cleanups sync.WaitGroup // touch's removals of earlier access keys
	heads    sync.Pool      // *[]byte of singlePut bytes: upload's read-ahead

	mu      sync.Mutex
	closed  bool
	touched map[string]time.Time // id → when this process last recorded a read
	// cleaning holds the ids whose earlier access keys a goroutine is
	// removing; true asks it for one more pass. One pass at a time per id:
	// a hot artifact re-put on every call would otherwise start a listing
	// per call, each slower than the last (issue 20's replica benchmark:
	// 1 GB of goroutines and a few calls a second).
	cleaning map[string]bool
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Annotator    = (*Store)(nil)
	_ store.Searcher     = (*Store)(nil)
	_ store.Collector    = (*Store)(nil)
	_ store.AccessLister = (*Store)(nil)
)

// Open connects to the bucket cfg names and checks that it exists (one
// request). Nothing is written.
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
	opts := &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken),
		Secure:    u.Scheme == "https",
		Region:    cfg.Region,
		Transport: cfg.Transport,
	}
	if cfg.AccessKey == "" && cfg.SecretKey == "" {
		opts.Creds = credentials.New(&credentials.Static{}) // anonymous
	}
	if cfg.PathStyle {
		opts.BucketLookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s := &Store{
		client: client, core: minio.Core{Client: client}, bucket: cfg.Bucket,
		prefix: cfg.Prefix, pageSize: cfg.PageSize, idPrefixLen: cfg.IDPrefixLen,
		candidates: cfg.SearchCandidates, partSize: cfg.PartSize, singlePut: cfg.SinglePutBytes,
		accessRes: cfg.AccessResolution, orphanGrace: cfg.OrphanGrace, putTimeout: cfg.PutTimeout, log: cfg.Logger,
		touched:  map[string]time.Time{},
		cleaning: map[string]bool{},
	}
	if s.prefix != "" && !strings.HasSuffix(s.prefix, "/") {
		s.prefix += "/"
	}
	s.where = "s3://" + s.bucket + "/" + s.prefix
	s.pageSize = orDefault(s.pageSize, DefaultPageSize)
	s.idPrefixLen = orDefault(s.idPrefixLen, store.DefaultIDPrefixLen)
	s.candidates = orDefault(s.candidates, DefaultSearchCandidates)
	s.partSize = orDefault(s.partSize, DefaultPartSize)
	s.singlePut = orDefault(s.singlePut, DefaultSinglePutBytes)
	s.accessRes = orDefault(s.accessRes, DefaultAccessResolution)
	s.orphanGrace = orDefault(s.orphanGrace, DefaultOrphanGrace)
	s.putTimeout = orDefault(s.putTimeout, DefaultPutTimeout)
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	s.heads.New = func() any { b := make([]byte, s.singlePut); return &b }
	ok, err := client.BucketExists(ctx, s.bucket)
	if err != nil {
		return nil, fmt.Errorf("s3store: %s: %w", s.where, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3store: %s: %w", s.where, ErrNoBucket)
	}
	return s, nil
}

func orDefault[T int | int64 | time.Duration](v, d T) T {
	if v < 1 {
		return d
	}
	return v
}

// Where names the store: s3://bucket/prefix.
func (s *Store) Where() string { return s.where }

// record is meta/<id>: what an artifact is, whichever scope asks.
type record struct {
	SHA256   string          `json:"sha256"`
	Size     int64           `json:"size"`
	MIMEType string          `json:"mime_type,omitempty"`
	Created  time.Time       `json:"created_at"`
	Blob     string          `json:"blob"`
	Content  json.RawMessage `json:"content,omitempty"`
}

// naming is the body of a scope/ key: what the latest put under that
// scope called the bytes (and the scope itself when too long for the key).
type naming struct {
	Scope    *store.Scope `json:"scope,omitempty"`
	Filename string       `json:"filename,omitempty"`
	Source   store.Source `json:"source"`
}

// Put streams r to the bucket, hashing as it goes, and records the
// artifact (see store.Store.Put and the package doc). An artifact put
// again keeps its id and first MIME type, and is listed under the name,
// source and first creation of each scope.
func (s *Store) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	ns := store.SanitizeNamespace(o.Namespace)
	if err := s.usable(ctx); err != nil {
		return store.Ref{}, fmt.Errorf("s3store: put[%s]: %w", ns, err)
	}
	pctx, cancel := context.WithTimeout(ctx, s.putTimeout)
	defer cancel()
	blob := newBlobName()
	// Content that fits one PUT is hashed while it goes: the record's
	// first lookups then run during the upload. early is set before
	// upload returns (onSum runs before the hash reaches it).
	var early chan *lookup
	n, sum, err := s.upload(pctx, blob, r, o.MaxBytes, func(sum string) {
		early = make(chan *lookup, 1)
		go func() { early <- s.lookUp(pctx, ns, sum) }()
	})
	if err != nil {
		return store.Ref{}, s.putError(ctx, pctx, ns, err)
	}
	var pre *lookup
	if early != nil {
		pre = <-early
	}
	ref, kept, err := s.record(pctx, ns, blob, n, sum, o, pre)
	if !kept {
		s.remove(ctx, s.key("blobs/", blob))
	}
	if err != nil {
		return store.Ref{}, s.putError(ctx, pctx, ns, err)
	}
	return ref, nil
}

// putError wraps a failed put's err; one that the put timeout (pctx's
// deadline, not the caller's ctx) cut is ErrPutTimeout, in words the
// model can read (the engine quotes the last part of the message).
func (s *Store) putError(ctx, pctx context.Context, ns string, err error) error {
	if ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("s3store: put[%s]: %w of %s", ns, ErrPutTimeout, s.putTimeout)
	}
	return fmt.Errorf("s3store: put[%s]: %w", ns, err)
}

// lookup is what recording a content first asks of the bucket: the
// artifact that holds it in the namespace, and the record of the first id
// it would get (looked up beside, so that a new artifact, the common put,
// costs one round trip less).
type lookup struct {
	first    string
	firstRec record
	firstOK  bool
	firstErr error
	id       string
	rec      record
	found    bool
	err      error
}

// lookUp asks both at once.
func (s *Store) lookUp(ctx context.Context, ns, sum string) *lookup {
	l := &lookup{first: store.NewID(ns, sum, s.idPrefixLen)}
	var wg sync.WaitGroup
	wg.Go(func() { l.firstRec, _, l.firstOK, l.firstErr = s.getRecord(ctx, l.first) })
	l.id, l.rec, l.found, l.err = s.byContent(ctx, ns, sum)
	wg.Wait()
	return l
}

// record names the uploaded blob: the existing artifact of this content
// in ns gains o's scope, or a new one is made. pre, when set, is the
// content's lookup made during the upload. kept reports whether the blob
// is now the artifact's bytes (else the caller removes it).
func (s *Store) record(ctx context.Context, ns, blob string, n int64, sum string, o store.PutOptions, pre *lookup) (ref store.Ref, kept bool, err error) {
	for range 5 {
		l := pre
		if l == nil {
			l = s.lookUp(ctx, ns, sum)
		}
		pre = nil // a second round looks again
		first, id, rec, found := l.first, l.id, l.rec, l.found
		if err = l.err; err != nil {
			return store.Ref{}, false, err
		}
		if found {
			ref, ok, err := s.addScope(ctx, id, rec, o)
			ref.AlreadyStored = ok
			if err != nil || ok {
				return ref, false, err
			}
			continue // deleted meanwhile: record it again
		}
		id, err = store.AllocateID(ns, sum, s.idPrefixLen, func(id string) (string, bool) {
			if id == first {
				if l.firstErr != nil {
					err = l.firstErr
				}
				return l.firstRec.SHA256, l.firstOK
			}
			rec, _, ok, gerr := s.getRecord(ctx, id)
			if gerr != nil {
				err = gerr
			}
			return rec.SHA256, ok
		})
		if err != nil {
			return store.Ref{}, false, err
		}
		if !o.Quota.IsZero() {
			if err := s.checkQuota(ctx, o.Quota, o.Scope, "", n); err != nil {
				return store.Ref{}, false, err
			}
		}
		ref = store.NewRef(id, sum, n, o)
		rec = record{SHA256: sum, Size: n, MIMEType: o.MIMEType, Created: ref.Created, Blob: blob}
		created, err := s.putJSON(ctx, s.key("meta/", id), rec, true)
		if err != nil {
			return store.Ref{}, false, err
		}
		if !created {
			continue // another put made it first: join it
		}
		// The rest at once, one round trip: the artifact is listed under
		// a scope only once that scope's key is there, so until then
		// nobody lists it (see the package doc).
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return s.putBytes(gctx, s.key("hash/", ns+"/"+sum), []byte(id)) })
		g.Go(func() error {
			_, err := s.putJSON(gctx, s.scopeKey(id, ref.Created, o.Scope), s.namingOf(o, ""), false)
			return err
		})
		g.Go(func() error { return s.putOrder(gctx, id, rec) })
		err = g.Wait()
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			if derr := s.deleteArtifact(cctx, id, rec); derr != nil {
				s.log.Warn("removing a put cut half way (Collect sweeps what is left)", "id", id, "error", derr)
			}
			cancel()
			return store.Ref{}, true, err
		}
		s.recent.add(id, blob)
		return ref, true, nil
	}
	return store.Ref{}, false, fmt.Errorf("content %s: the artifact kept changing under this put", sum[:12])
}

// byContent finds the artifact of sum in ns.
func (s *Store) byContent(ctx context.Context, ns, sum string) (id string, rec record, found bool, err error) {
	b, _, err := s.getBytes(ctx, s.key("hash/", ns+"/"+sum), 1024)
	if isNotFound(err) {
		return "", record{}, false, nil
	}
	if err != nil {
		return "", record{}, false, err
	}
	id = string(b)
	if !store.ValidID(id) {
		return "", record{}, false, nil
	}
	rec, _, ok, err := s.getRecord(ctx, id)
	if err != nil || !ok || rec.SHA256 != sum {
		return "", record{}, false, err
	}
	return id, rec, true, nil
}

// addScope records o's scope (and name) on the existing artifact id. ok
// is false when the artifact went away meanwhile.
func (s *Store) addScope(ctx context.Context, id string, rec record, o store.PutOptions) (ref store.Ref, ok bool, err error) {
	keys, err := s.scopeKeys(ctx, id)
	if err != nil {
		return store.Ref{}, false, err
	}
	var own *scopeEntry
	for i := range keys {
		if keys[i].scope == o.Scope {
			own = &keys[i]
			break
		}
	}
	if own == nil && !o.Quota.IsZero() {
		if err := s.checkQuota(ctx, o.Quota, o.Scope, id, rec.Size); err != nil {
			return store.Ref{}, false, err
		}
	}
	added := time.Now().UTC().Round(0)
	key, prevName := s.scopeKey(id, added, o.Scope), ""
	if own != nil {
		added = own.created(rec)
		key = own.key
		if o.Filename == "" {
			nm, _ := s.getNaming(ctx, own.key)
			prevName = nm.Filename
		}
	}
	if _, err := s.putJSON(ctx, key, s.namingOf(o, prevName), false); err != nil {
		return store.Ref{}, false, err
	}
	if err := s.putOrder(ctx, id, rec); err != nil {
		return store.Ref{}, false, err
	}
	s.touch(ctx, id, true)
	// A Delete may have run meanwhile: the artifact is ours only if its
	// record and bytes are still there.
	now, _, found, err := s.getRecord(ctx, id)
	if err != nil {
		return store.Ref{}, false, err
	}
	if !found || now.Blob != rec.Blob {
		return store.Ref{}, false, nil
	}
	if _, err := s.client.StatObject(ctx, s.bucket, s.key("blobs/", rec.Blob), minio.StatObjectOptions{}); err != nil {
		if isNotFound(err) {
			return store.Ref{}, false, nil
		}
		return store.Ref{}, false, err
	}
	s.recent.add(id, rec.Blob)
	ref = rec.ref(id, o.Scope)
	ref.Created = added
	ref.Filename = o.Filename
	if ref.Filename == "" {
		ref.Filename = prevName
	}
	ref.Source = o.Source
	return ref, true, nil
}

// namingOf is the scope/ body a put with o writes.
func (s *Store) namingOf(o store.PutOptions, prevName string) naming {
	n := naming{Filename: o.Filename, Source: o.Source}
	if n.Filename == "" {
		n.Filename = prevName
	}
	if _, inKey := encodeScope(o.Scope); !inKey {
		sc := o.Scope
		n.Scope = &sc
	}
	return n
}

// ref is the Ref of the artifact id seen from scope sc.
func (r record) ref(id string, sc store.Scope) store.Ref {
	return store.Ref{ID: id, MIMEType: r.MIMEType, SizeBytes: r.Size, SHA256: r.SHA256,
		Scope: sc, Created: r.Created, Content: r.Content}
}

// Get returns a reader of the artifact's bytes (or rng of them) and its
// ref, and records the read for lru.
func (s *Store) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	ref, rec, err := s.stat(ctx, id)
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	off, n, err := catalog.Bounds(rng, rec.Size)
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	s.touch(ctx, id, false)
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), ref, nil
	}
	var opts minio.GetObjectOptions
	if off != 0 || n != rec.Size {
		if err := opts.SetRange(off, off+n-1); err != nil {
			return nil, store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
		}
	}
	rc, _, _, err := s.core.GetObject(ctx, s.bucket, s.key("blobs/", rec.Blob), opts)
	if err != nil {
		if isNotFound(err) {
			err = fmt.Errorf("%w (its bytes are gone)", store.ErrNotFound)
		}
		return nil, store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	return rc, ref, nil
}

// Stat returns the artifact's ref.
func (s *Store) Stat(ctx context.Context, id string) (store.Ref, error) {
	ref, _, err := s.stat(ctx, id)
	if err != nil {
		return store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	return ref, nil
}

// stat returns the ref (with the artifact's first scope) and record of id.
func (s *Store) stat(ctx context.Context, id string) (store.Ref, record, error) {
	rec, keys, err := s.recordAndScopes(ctx, id)
	if err != nil {
		return store.Ref{}, record{}, err
	}
	ref, ok, err := s.refOf(ctx, id, rec, keys, store.Scope{})
	if err != nil {
		return store.Ref{}, record{}, err
	}
	if !ok {
		return store.Ref{}, record{}, store.ErrNotFound // being deleted
	}
	s.recent.add(id, rec.Blob)
	return ref, rec, nil
}

// recordAndScopes returns the record of id and its scope keys, read at
// once: one round trip, not two. A missing record is store.ErrNotFound.
func (s *Store) recordAndScopes(ctx context.Context, id string) (rec record, keys []scopeEntry, err error) {
	if err := s.usableID(ctx, id); err != nil {
		return record{}, nil, err
	}
	var ok bool
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { rec, _, ok, err = s.getRecord(gctx, id); return err })
	g.Go(func() (err error) { keys, err = s.scopeKeys(gctx, id); return err })
	if err := g.Wait(); err != nil {
		return record{}, nil, err
	}
	if !ok {
		return record{}, nil, store.ErrNotFound
	}
	return rec, keys, nil
}

// refIn returns the ref of id with the first of its scopes that filter
// contains and that scope's name; ok is false when none is.
func (s *Store) refIn(ctx context.Context, id string, rec record, filter store.Scope) (store.Ref, bool, error) {
	keys, err := s.scopeKeys(ctx, id)
	if err != nil {
		return store.Ref{}, false, err
	}
	return s.refOf(ctx, id, rec, keys, filter)
}

// refOf is refIn with the scope keys listed.
func (s *Store) refOf(ctx context.Context, id string, rec record, keys []scopeEntry, filter store.Scope) (store.Ref, bool, error) {
	for _, k := range keys {
		if !filter.Contains(k.scope) {
			continue
		}
		ref, err := s.refAs(ctx, id, rec, k)
		return ref, err == nil, err
	}
	return store.Ref{}, false, nil
}

// refAs is the ref of id as its scope key k holds it: k's scope, its
// creation, and the name and source of its latest put.
func (s *Store) refAs(ctx context.Context, id string, rec record, k scopeEntry) (store.Ref, error) {
	ref := rec.ref(id, k.scope)
	ref.Created = k.created(rec)
	nm, err := s.getNaming(ctx, k.key)
	if err != nil && !isNotFound(err) {
		return store.Ref{}, err
	}
	ref.Filename, ref.Source = nm.Filename, nm.Source
	return ref, nil
}

// Owned returns the artifact as owner holds it (see store.Store.Owned):
// its record and one listing of its scope keys, then the names of
// owner's.
func (s *Store) Owned(ctx context.Context, id string, owner store.Owner) ([]store.Ref, error) {
	rec, keys, err := s.recordAndScopes(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	var refs []store.Ref
	for _, k := range keys {
		if !owner.Holds(k.scope) {
			continue
		}
		ref, err := s.refAs(ctx, id, rec, k)
		if err != nil {
			return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// InScope reports whether the artifact was put under a scope that scope
// contains: one listing of its scope keys.
func (s *Store) InScope(ctx context.Context, id string, scope store.Scope) (bool, error) {
	if err := s.usableID(ctx, id); err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	keys, err := s.scopeKeys(ctx, id)
	if err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if len(keys) == 0 {
		if _, _, ok, err := s.getRecord(ctx, id); err != nil || !ok {
			if err == nil {
				err = store.ErrNotFound
			}
			return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
		}
	}
	for _, k := range keys {
		if scope.Contains(k.scope) {
			return true, nil
		}
	}
	return false, nil
}

// Exists reports whether the artifact is stored.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	if err := s.usableID(ctx, id); err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	_, _, ok, err := s.getRecord(ctx, id)
	if err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	return ok, nil
}

// Delete removes the artifact. Deleting one another process deleted
// first returns store.ErrNotFound.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.usableID(ctx, id); err != nil {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	rec, _, ok, err := s.getRecord(ctx, id)
	if err != nil {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !ok {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), store.ErrNotFound)
	}
	claimed, err := s.claimAndDelete(ctx, id, rec)
	if err != nil {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !claimed {
		return fmt.Errorf("s3store: artifact[%s]: %w (being deleted)", store.QuoteID(id), store.ErrNotFound)
	}
	return nil
}

// claimAndDelete deletes the artifact if this call claims it: of several
// deletes at once (collectors on several replicas), the one that creates
// gone/<id>.<blob> deletes and reports; the others find nothing.
func (s *Store) claimAndDelete(ctx context.Context, id string, rec record) (bool, error) {
	claimed, err := s.putJSON(ctx, s.key("gone/", id+"."+rec.Blob), struct{}{}, true)
	if err != nil || !claimed {
		return false, err
	}
	return true, s.deleteArtifact(ctx, id, rec)
}

// deleteArtifact removes every object of the artifact id, unlisting it
// first and taking its bytes last (see the package doc). Objects already
// gone are no error.
func (s *Store) deleteArtifact(ctx context.Context, id string, rec record) error {
	ns, _, _ := store.SplitID(id)
	keys := []string{s.orderKey(id, rec), s.rorderKey(id, rec)}
	if owner, _, err := s.getBytes(ctx, s.key("hash/", ns+"/"+rec.SHA256), 1024); err == nil && string(owner) == id {
		keys = append(keys, s.key("hash/", ns+"/"+rec.SHA256))
	}
	for _, k := range keys {
		if err := s.removeErr(ctx, k); err != nil {
			return err
		}
	}
	var later []string
	for _, pfx := range []string{"scope/" + id + "/", "access/" + id + "/"} {
		for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + pfx, Recursive: true}) {
			if obj.Err != nil {
				return obj.Err
			}
			later = append(later, obj.Key)
		}
	}
	later = append(later, s.key("meta/", id), s.key("text/", id), s.key("blobs/", rec.Blob))
	for _, k := range later {
		if err := s.removeErr(ctx, k); err != nil {
			return err
		}
	}
	s.mu.Lock()
	delete(s.touched, id)
	s.mu.Unlock()
	s.recent.forget(id)
	return nil
}

// Close marks the store closed and waits for touch's background
// removals. It is idempotent and ignores ctx.
func (s *Store) Close(context.Context) error {
	s.cleanups.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.touched = map[string]time.Time{}
	return nil
}

// usable returns ctx's error, or ErrClosed after Close.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

func (s *Store) usableID(ctx context.Context, id string) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if !store.ValidID(id) {
		return store.ErrInvalidID
	}
	return nil
}

// touch records a read of id (access/<id>/<now>) unless this process did
// within Config.AccessResolution; force records a re-put regardless. The
// earlier access keys are removed. Failures are logged: a missed touch
// only makes lru a little less exact.
func (s *Store) touch(ctx context.Context, id string, force bool) {
	now := time.Now()
	s.mu.Lock()
	last, seen := s.touched[id]
	if !force && seen && now.Sub(last) < s.accessRes {
		s.mu.Unlock()
		return
	}
	s.touched[id] = now
	s.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	key := s.key("access/", id+"/"+nanos(now))
	if err := s.putBytes(ctx, key, nil); err != nil {
		s.log.Warn("recording a read", "id", id, "error", err)
		return
	}
	// The earlier keys go in the background: lru reads the newest.
	s.mu.Lock()
	if _, busy := s.cleaning[id]; busy {
		s.cleaning[id] = true // the running pass goes once more
		s.mu.Unlock()
		return
	}
	s.cleaning[id] = false
	s.mu.Unlock()
	s.cleanups.Add(1)
	go func() {
		defer s.cleanups.Done()
		for {
			s.removeOlderAccess(ctx, id)
			s.mu.Lock()
			if !s.cleaning[id] {
				delete(s.cleaning, id)
				s.mu.Unlock()
				return
			}
			s.cleaning[id] = false
			s.mu.Unlock()
		}
	}()
}

// removeOlderAccess removes every access key of id but the newest (keys
// sort by time).
func (s *Store) removeOlderAccess(ctx context.Context, id string) {
	prev := ""
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.key("access/", id+"/"), Recursive: true}) {
		if obj.Err != nil {
			return
		}
		if prev != "" {
			s.remove(ctx, prev)
		}
		prev = obj.Key
	}
}

// key is the object key of name under the prefix and part ("meta/").
func (s *Store) key(part, name string) string { return s.prefix + part + name }

// getRecord reads meta/<id>; ok is false when it does not exist.
func (s *Store) getRecord(ctx context.Context, id string) (rec record, etag string, ok bool, err error) {
	b, etag, err := s.getBytes(ctx, s.key("meta/", id), 1<<20)
	if isNotFound(err) {
		return record{}, "", false, nil
	}
	if err != nil {
		return record{}, "", false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, "", false, fmt.Errorf("meta/%s: %w", id, err)
	}
	return rec, etag, true, nil
}

func (s *Store) getNaming(ctx context.Context, key string) (naming, error) {
	var n naming
	b, _, err := s.getBytes(ctx, key, 1<<20)
	if err != nil {
		return n, err
	}
	if len(b) == 0 {
		return n, nil
	}
	return n, json.Unmarshal(b, &n)
}

// getBytes reads a small object whole (at most limit bytes).
func (s *Store) getBytes(ctx context.Context, key string, limit int64) ([]byte, string, error) {
	rc, info, _, err := s.core.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("%s: over %d bytes", key, limit)
	}
	return b, info.ETag, nil
}

// putJSON writes v to key; with create it writes only when key does not
// exist, and created reports whether it did.
func (s *Store) putJSON(ctx context.Context, key string, v any, create bool) (created bool, err error) {
	b, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	opts := minio.PutObjectOptions{ContentType: "application/json"}
	if create {
		opts.SetMatchETagExcept("*")
	}
	err = s.putSmall(ctx, key, b, opts)
	if create && isPreconditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

func (s *Store) putBytes(ctx context.Context, key string, b []byte) error {
	return s.putSmall(ctx, key, b, minio.PutObjectOptions{})
}

// putSmall writes b, held whole, to key in one PUT signed with its
// sha256: the server checks the bytes against it. minio-go's PutObject
// would sign in 64 KiB chunks over plain HTTP (aws-chunked encoding, a
// second pass of hashing on each side), and send the bytes unverified
// over HTTPS.
func (s *Store) putSmall(ctx context.Context, key string, b []byte, opts minio.PutObjectOptions) error {
	sum := sha256.Sum256(b)
	opts.DisableContentSha256 = true // sign with sum rather than stream-sign
	_, err := s.core.PutObject(ctx, s.bucket, key, bytes.NewReader(b), int64(len(b)), "", hex.EncodeToString(sum[:]), opts)
	return err
}

// cleanupTimeout bounds a cleanup after a failed or cut put (the
// caller's context may be over by then): an object store that does not
// answer leaves the object to a later Collect.
const cleanupTimeout = time.Minute

// remove deletes key, logging a failure (a later Collect sweeps it). It
// runs whether or not ctx has ended, for up to cleanupTimeout.
func (s *Store) remove(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := s.removeErr(ctx, key); err != nil {
		s.log.Warn("removing an object", "key", key, "error", err)
	}
}

func (s *Store) removeErr(ctx context.Context, key string) error {
	err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if isNotFound(err) {
		return nil
	}
	return err
}

func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey"
}

func isPreconditionFailed(err error) bool {
	if err == nil {
		return false
	}
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed"
}

func newBlobName() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nanos writes t as 20 decimal digits, so keys sort by time.
func nanos(t time.Time) string { return fmt.Sprintf("%020d", t.UnixNano()) }
