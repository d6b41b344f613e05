package s3store

// Writes: a put's upload and the records that name it, a delete, and an
// annotation (see the package doc).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

	"github.com/mcpx-dev/mcpx/store"
)

// writer puts, deletes and annotates artifacts.
type writer struct {
	idPrefixLen int
	putTimeout  time.Duration
	log         hclog.Logger
	life        *openState
	bucket      *bucket
	records     *records
	uploads     *uploader
	access      *accessLog
	recent      *recentBlobs
}

// put streams r to the bucket, hashing as it goes, and records the
// artifact (see the package doc).
func (w *writer) put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	ns := store.SanitizeNamespace(o.Namespace)
	if err := w.life.usable(ctx); err != nil {
		return store.Ref{}, fmt.Errorf("s3store: put[%s]: %w", ns, err)
	}
	pctx, cancel := context.WithTimeout(ctx, w.putTimeout)
	defer cancel()
	blob := newBlobName()
	// Content that fits one PUT is hashed while it goes: the record's
	// first lookups then run during the upload. early is set before
	// upload returns (onSum runs before the hash reaches it).
	var early chan *lookup
	n, sum, err := w.uploads.upload(pctx, blob, r, o.MaxBytes, func(sum string) {
		early = make(chan *lookup, 1)
		go func() { early <- w.lookUp(pctx, ns, sum) }()
	})
	if err != nil {
		return store.Ref{}, w.putError(ctx, pctx, ns, err)
	}
	var pre *lookup
	if early != nil {
		pre = <-early
	}
	ref, kept, err := w.record(pctx, ns, blob, n, sum, o, pre)
	if !kept {
		w.bucket.remove(ctx, w.bucket.key("blobs/", blob))
	}
	if err != nil {
		return store.Ref{}, w.putError(ctx, pctx, ns, err)
	}
	return ref, nil
}

// putError wraps a failed put's err; one that the put timeout (pctx's
// deadline, not the caller's ctx) cut is ErrPutTimeout, in words the
// model can read (the engine quotes the last part of the message).
func (w *writer) putError(ctx, pctx context.Context, ns string, err error) error {
	if ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("s3store: put[%s]: %w of %s", ns, ErrPutTimeout, w.putTimeout)
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
func (w *writer) lookUp(ctx context.Context, ns, sum string) *lookup {
	l := &lookup{first: store.NewID(ns, sum, w.idPrefixLen)}
	var wg sync.WaitGroup
	wg.Go(func() { l.firstRec, _, l.firstOK, l.firstErr = w.records.get(ctx, l.first) })
	l.id, l.rec, l.found, l.err = w.records.byContent(ctx, ns, sum)
	wg.Wait()
	return l
}

// record names the uploaded blob: the existing artifact of this content
// in ns gains o's scope, or a new one is made. pre, when set, is the
// content's lookup made during the upload. kept reports whether the blob
// is now the artifact's bytes (else the caller removes it).
func (w *writer) record(ctx context.Context, ns, blob string, n int64, sum string, o store.PutOptions, pre *lookup) (ref store.Ref, kept bool, err error) {
	for range 5 {
		l := pre
		if l == nil {
			l = w.lookUp(ctx, ns, sum)
		}
		pre = nil // a second round looks again
		first, id, rec, found := l.first, l.id, l.rec, l.found
		if err = l.err; err != nil {
			return store.Ref{}, false, err
		}
		if found {
			ref, ok, err := w.addScope(ctx, id, rec, o)
			ref.AlreadyStored = ok
			if err != nil || ok {
				return ref, false, err
			}
			continue // deleted meanwhile: record it again
		}
		id, err = store.AllocateID(ns, sum, w.idPrefixLen, func(id string) (string, bool) {
			if id == first {
				if l.firstErr != nil {
					err = l.firstErr
				}
				return l.firstRec.SHA256, l.firstOK
			}
			rec, _, ok, gerr := w.records.get(ctx, id)
			if gerr != nil {
				err = gerr
			}
			return rec.SHA256, ok
		})
		if err != nil {
			return store.Ref{}, false, err
		}
		if !o.Quota.IsZero() {
			if err := w.checkQuota(ctx, o.Quota, o.Scope, "", n); err != nil {
				return store.Ref{}, false, err
			}
		}
		ref = store.NewRef(id, sum, n, o)
		rec = record{SHA256: sum, Size: n, MIMEType: o.MIMEType, Created: ref.Created, Blob: blob}
		created, err := w.bucket.putJSON(ctx, w.bucket.key("meta/", id), rec, true)
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
		g.Go(func() error { return w.bucket.putBytes(gctx, w.bucket.key("hash/", ns+"/"+sum), []byte(id)) })
		g.Go(func() error {
			_, err := w.bucket.putJSON(gctx, w.records.scopeKey(id, ref.Created, o.Scope), namingOf(o, ""), false)
			return err
		})
		g.Go(func() error { return w.records.putOrder(gctx, id, rec) })
		err = g.Wait()
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			if derr := w.deleteArtifact(cctx, id, rec); derr != nil {
				w.log.Warn("removing a put cut half way (Collect sweeps what is left)", "id", id, "error", derr)
			}
			cancel()
			return store.Ref{}, true, err
		}
		w.recent.add(id, blob)
		return ref, true, nil
	}
	return store.Ref{}, false, fmt.Errorf("content %s: the artifact kept changing under this put", sum[:12])
}

// addScope records o's scope (and name) on the existing artifact id. ok
// is false when the artifact went away meanwhile.
func (w *writer) addScope(ctx context.Context, id string, rec record, o store.PutOptions) (ref store.Ref, ok bool, err error) {
	keys, err := w.records.scopeKeys(ctx, id)
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
		if err := w.checkQuota(ctx, o.Quota, o.Scope, id, rec.Size); err != nil {
			return store.Ref{}, false, err
		}
	}
	added := time.Now().UTC().Round(0)
	key, prevName := w.records.scopeKey(id, added, o.Scope), ""
	if own != nil {
		added = own.created(rec)
		key = own.key
		if o.Filename == "" {
			nm, _ := w.records.naming(ctx, own.key)
			prevName = nm.Filename
		}
	}
	if _, err := w.bucket.putJSON(ctx, key, namingOf(o, prevName), false); err != nil {
		return store.Ref{}, false, err
	}
	if err := w.records.putOrder(ctx, id, rec); err != nil {
		return store.Ref{}, false, err
	}
	w.access.touch(ctx, id, true)
	// A Delete may have run meanwhile: the artifact is ours only if its
	// record and bytes are still there.
	now, _, found, err := w.records.get(ctx, id)
	if err != nil {
		return store.Ref{}, false, err
	}
	if !found || now.Blob != rec.Blob {
		return store.Ref{}, false, nil
	}
	if ok, err := w.bucket.exists(ctx, w.bucket.key("blobs/", rec.Blob)); err != nil || !ok {
		return store.Ref{}, false, err
	}
	w.recent.add(id, rec.Blob)
	ref = rec.ref(id, o.Scope)
	ref.Created = added
	ref.Filename = o.Filename
	if ref.Filename == "" {
		ref.Filename = prevName
	}
	ref.Source = o.Source
	return ref, true, nil
}

// delete removes the artifact. Deleting one another process deleted
// first returns store.ErrNotFound.
func (w *writer) delete(ctx context.Context, id string) error {
	if err := w.life.usableID(ctx, id); err != nil {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	rec, _, ok, err := w.records.get(ctx, id)
	if err != nil {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !ok {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), store.ErrNotFound)
	}
	claimed, err := w.claimAndDelete(ctx, id, rec)
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
func (w *writer) claimAndDelete(ctx context.Context, id string, rec record) (bool, error) {
	claimed, err := w.bucket.putJSON(ctx, w.bucket.key("gone/", id+"."+rec.Blob), struct{}{}, true)
	if err != nil || !claimed {
		return false, err
	}
	return true, w.deleteArtifact(ctx, id, rec)
}

// deleteArtifact removes every object of the artifact id, unlisting it
// first and taking its bytes last (see the package doc). Objects already
// gone are no error.
func (w *writer) deleteArtifact(ctx context.Context, id string, rec record) error {
	ns, _, _ := store.SplitID(id)
	keys := []string{w.records.orderKey(id, rec), w.records.rorderKey(id, rec)}
	if owner, _, err := w.bucket.getBytes(ctx, w.bucket.key("hash/", ns+"/"+rec.SHA256), 1024); err == nil && string(owner) == id {
		keys = append(keys, w.bucket.key("hash/", ns+"/"+rec.SHA256))
	}
	for _, k := range keys {
		if err := w.bucket.removeErr(ctx, k); err != nil {
			return err
		}
	}
	var later []string
	for _, part := range []string{"scope/", "access/"} {
		for obj, err := range w.bucket.keys(ctx, part, id+"/") {
			if err != nil {
				return err
			}
			later = append(later, obj.key)
		}
	}
	later = append(later, w.bucket.key("meta/", id), w.bucket.key("text/", id), w.bucket.key("blobs/", rec.Blob))
	for _, k := range later {
		if err := w.bucket.removeErr(ctx, k); err != nil {
			return err
		}
	}
	w.access.forget(id)
	w.recent.forget(id)
	return nil
}

// checkQuota is memstore's checkQuota over a snapshot: not atomic with
// the put across replicas (two replicas may each admit the last
// artifact a limit allows).
func (w *writer) checkQuota(ctx context.Context, q store.Quota, sc store.Scope, id string, size int64) error {
	entries, err := w.records.snapshot(ctx)
	if err != nil {
		return err
	}
	return q.Check(helds(entries), sc, id, size)
}

// annotate keeps the artifact's content summary in its record (returned
// in Ref.Content) and its text parts in text/<id> (what Search reads),
// replacing earlier ones. The record is rewritten only if unchanged since
// it was read (If-Match), so an Annotate racing a Delete cannot bring the
// record back.
func (w *writer) annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	if err := w.life.usableID(ctx, id); err != nil {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if len(content) > 0 && !json.Valid(content) {
		return fmt.Errorf("s3store: artifact[%s]: content is not JSON", id)
	}
	for range 5 {
		rec, etag, ok, err := w.records.get(ctx, id)
		if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, err)
		}
		if !ok {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, store.ErrNotFound)
		}
		rec.Content = nil
		if len(content) > 0 {
			rec.Content = content
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, err)
		}
		if err = w.bucket.putSmall(ctx, w.bucket.key("meta/", id), b, "application/json", condition{ifMatch: etag}); isPreconditionFailed(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, err)
		}
		if len(parts) == 0 {
			err = w.bucket.removeErr(ctx, w.bucket.key("text/", id))
		} else {
			_, err = w.bucket.putJSON(ctx, w.bucket.key("text/", id), parts, false)
		}
		if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: text: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("s3store: artifact[%s]: its record kept changing", id)
}
