//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The store moves files between tmp/ and blobs/ through directory handles
// opened once at Open, never through paths: a tmp/ or blobs/ swapped for a
// symbolic link while the store is open is not followed.

// linkAt makes newName in newDir a hard link to oldName in oldDir.
func linkAt(oldDir *os.File, oldName string, newDir *os.File, newName string) error {
	return ignoreEINTR(func() error { return unix.Linkat(int(oldDir.Fd()), oldName, int(newDir.Fd()), newName, 0) })
}

// renameAt renames oldName in oldDir to newName in newDir.
func renameAt(oldDir *os.File, oldName string, newDir *os.File, newName string) error {
	return ignoreEINTR(func() error { return unix.Renameat(int(oldDir.Fd()), oldName, int(newDir.Fd()), newName) })
}

func ignoreEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// linkCount returns the number of hard links of the file fi describes.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
