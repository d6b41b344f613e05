//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

const locksSupported = true

// flock takes a shared or exclusive flock(2) lock on f, polling until ctx is
// done when another open file description holds a conflicting one.
func flock(ctx context.Context, f *os.File, exclusive bool) error {
	delay := time.Millisecond
	for {
		ok, err := tryFlock(f, exclusive)
		if err != nil || ok {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for lock %s: %w", f.Name(), ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// tryFlock takes the lock if it is free and reports whether it did.
func tryFlock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
}

// syncDir fsyncs the directory dir, making renames and creations in it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkPrivateDir checks that dir is a directory, not a link, owned by this
// user and closed to everyone else.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (mode %v)", dir, fi.Mode())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not by this user (uid %d)", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %v, want no access for group and others", dir, fi.Mode().Perm())
	}
	return nil
}

// writable reports whether this process may write in dir (access(2)).
func writable(dir string) bool { return syscall.Access(dir, 2 /* W_OK */) == nil }

// oNoFollow makes an open fail on a symbolic link in the last component.
const oNoFollow = syscall.O_NOFOLLOW
