package fsstore

import (
	"context"
	"os"
)

// openLock is open.lock: every open store holds it shared for its
// lifetime; a process that gets it exclusively has the folder to itself
// and may settle what a kill left (recovery) or set a damaged index
// aside. A read-only store of a folder without one does without (f nil).
type openLock struct {
	f *os.File
	// exclusive is set while Open holds the lock exclusively.
	exclusive bool
}

// create opens (creating it when missing) the lock file at path.
func (l *openLock) create(path string) error {
	var err error
	l.f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	return err
}

// openIfPresent opens the lock file at path when it exists.
func (l *openLock) openIfPresent(path string) error {
	var err error
	l.f, err = openIfPresent(path)
	return err
}

// tryExclusive takes the lock exclusively if no other open file holds
// it, and reports whether it did.
func (l *openLock) tryExclusive() (bool, error) { return tryFlock(l.f, true) }

// share takes (or converts to) a shared hold, waiting while another
// process holds it exclusively. Without a lock file it does nothing.
func (l *openLock) share(ctx context.Context) error {
	if l.f == nil {
		return nil
	}
	return flock(ctx, l.f, false)
}

// close releases the lock; a second close does nothing.
func (l *openLock) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
