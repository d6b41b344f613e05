// Package noopstore is the fallback (docs/design.md, "The store's
// promises") for when no artifact store can
// be used (no writable folder, the store disabled by config): it keeps no
// bytes. Put still reads the stream to the end and hashes it, so the
// returned ref names the content exactly (id "truncated_{sha256[:12]}",
// SHA256, SizeBytes) and says Truncated; the caller keeps only a preview.
// Every read answers store.ErrNotStored, so a download handler can tell
// "never kept" from "not found".
package noopstore

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/putio"
)

// Namespace is the namespace of every id this store hands out.
const Namespace = "truncated"

// Store keeps nothing. It is safe for concurrent use.
type Store struct {
	log    hclog.Logger
	warn   sync.Once
	closed atomic.Bool
}

var _ store.Store = (*Store)(nil)

// New returns a store that logs one warning to log (nil means no logging)
// the first time Put is called.
func New(log hclog.Logger) *Store {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Store{log: log}
}

// Put reads r to the end (or to MaxBytes), hashing it, keeps nothing and
// returns a ref with Truncated set. Bytes and options are not recorded: an
// identical later Put gets the same id.
func (s *Store) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	if s.closed.Load() {
		return store.Ref{}, fmt.Errorf("noopstore: put: %w", store.ErrClosed)
	}
	s.warn.Do(func() {
		s.log.Warn("artifact store disabled: artifacts are truncated, their bytes are not kept",
			"server", o.Source.Server, "tool", o.Source.Tool)
	})
	n, sum, err := putio.Copy(ctx, io.Discard, r, o.MaxBytes)
	if err != nil {
		return store.Ref{}, fmt.Errorf("noopstore: put[%s]: %w", store.SanitizeNamespace(o.Namespace), err)
	}
	ref := store.NewRef(store.NewID(Namespace, sum, store.DefaultIDPrefixLen), sum, n, o)
	ref.Truncated = true
	return ref, nil
}

// Get returns store.ErrNotStored for every valid id.
func (s *Store) Get(ctx context.Context, id string, _ *store.Range) (io.ReadCloser, store.Ref, error) {
	return nil, store.Ref{}, s.notStored(ctx, id)
}

// Stat returns store.ErrNotStored for every valid id.
func (s *Store) Stat(ctx context.Context, id string) (store.Ref, error) {
	return store.Ref{}, s.notStored(ctx, id)
}

// InScope returns store.ErrNotStored for every valid id.
func (s *Store) InScope(ctx context.Context, id string, _ store.Scope) (bool, error) {
	return false, s.notStored(ctx, id)
}

// Owned returns store.ErrNotStored for every valid id.
func (s *Store) Owned(ctx context.Context, id string, _ store.Owner) ([]store.Ref, error) {
	return nil, s.notStored(ctx, id)
}

// Exists reports false for every valid id.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	if err := s.check(ctx, id); err != nil {
		return false, err
	}
	return false, nil
}

// Delete returns store.ErrNotStored for every valid id: there is nothing to
// delete.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.notStored(ctx, id)
}

// List returns no refs.
func (s *Store) List(ctx context.Context, _ store.Scope, cursor string) ([]store.Ref, string, error) {
	if s.closed.Load() {
		return nil, "", fmt.Errorf("noopstore: list: %w", store.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("noopstore: list: %w", err)
	}
	if cursor != "" {
		return nil, "", fmt.Errorf("noopstore: list: cursor[%s]: %w", cursor, store.ErrInvalidCursor)
	}
	return nil, "", nil
}

// Close marks the store closed. It is idempotent.
func (s *Store) Close(context.Context) error {
	s.closed.Store(true)
	return nil
}

func (s *Store) check(ctx context.Context, id string) error {
	if s.closed.Load() {
		return fmt.Errorf("noopstore: artifact[%s]: %w", store.QuoteID(id), store.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("noopstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return fmt.Errorf("noopstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	return nil
}

func (s *Store) notStored(ctx context.Context, id string) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("noopstore: artifact[%s]: %w", store.QuoteID(id), store.ErrNotStored)
}
