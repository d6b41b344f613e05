//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package fsstore

import (
	"context"
	"errors"
	"os"
	"runtime"
)

const locksSupported = false

var errNoLocks = errors.New("file locks are not supported on " + runtime.GOOS)

func flock(context.Context, *os.File, bool) error { return errNoLocks }
func tryFlock(*os.File, bool) (bool, error)       { return false, errNoLocks }
func syncDir(string) error                        { return nil }
func checkPrivateDir(string) error                { return nil }

func linkAt(*os.File, string, *os.File, string) error   { return errNoLocks }
func renameAt(*os.File, string, *os.File, string) error { return errNoLocks }
func linkCount(os.FileInfo) uint64                      { return 1 }

// writable is false where the store does not run (Open fails first).
func writable(string) bool { return false }

// oNoFollow is unused where the store does not run (Open fails first).
const oNoFollow = 0
