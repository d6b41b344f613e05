//go:build linux

package memfdbuf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Buffer is a file read into a memfd and mapped whole.
type Buffer struct {
	fd   int
	buf  []byte // the whole mapping, read-only
	base uintptr

	mu    sync.Mutex
	views [][]byte // mapped by View, unmapped with the buffer
}

// ReadFile reads the size bytes left in f (a regular file, read from its
// current offset) into a new memfd and returns them mapped read-only. It
// returns ErrUnsupported (wrapped) when the kernel cannot, or when f does
// not hold exactly size bytes from its offset (it changed since the Stat
// that gave size); f's offset is then where it was, for the caller to read
// it. On success f's offset is past what was read.
func ReadFile(f *os.File, size int64) (*Buffer, error) {
	if size <= 0 || size != int64(int(size)) {
		return nil, fmt.Errorf("%w: size %d", ErrUnsupported, size)
	}
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	fd, err := unix.MemfdCreate("mcpx-input", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: memfd_create: %w", ErrUnsupported, err)
	}
	keep := false
	defer func() {
		if !keep {
			unix.Close(fd)
		}
	}()
	if err := unix.Ftruncate(fd, size); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	var copyErr error
	if err := rc.Control(func(in uintptr) { copyErr = sendAll(fd, int(in), start, size) }); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if copyErr != nil {
		return nil, copyErr
	}
	buf, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("%w: mmap: %w", ErrUnsupported, err)
	}
	if _, err := f.Seek(start+size, io.SeekStart); err != nil {
		unix.Munmap(buf)
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	keep = true
	return &Buffer{fd: fd, buf: buf, base: uintptr(unsafe.Pointer(unsafe.SliceData(buf)))}, nil
}

// Bytes are the file's bytes, read-only, until Release.
func (m *Buffer) Bytes() []byte { return m.buf }

// sendAll copies size bytes of in from offset start to the memfd out.
// A file that ends before size bytes, or goes on after them, is
// ErrUnsupported (it changed since its Stat).
func sendAll(out, in int, start, size int64) error {
	pos := start
	for pos < start+size {
		n, err := unix.Sendfile(out, in, &pos, int(start+size-pos))
		switch {
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return fmt.Errorf("%w: sendfile: %w", ErrUnsupported, err)
		case n == 0:
			return fmt.Errorf("%w: the file ended %d bytes early", ErrUnsupported, start+size-pos)
		}
	}
	var one [1]byte
	if n, _ := unix.Pread(in, one[:], pos); n > 0 {
		return fmt.Errorf("%w: the file grew", ErrUnsupported)
	}
	return nil
}

// View returns a new buffer of before+(end-off)+after bytes whose middle,
// [before, before+end-off), holds b[off:end] without a copy: the same
// pages, mapped copy-on-write, so that writing the buffer's head and tail
// (the caller's to fill) changes nothing of b. It reports false when
// b[off:end] is not inside m's bytes (m nil included), or when the head
// would start before their first byte. The buffer must not be written
// inside its middle: the pages wholly inside it are read-only. It lives
// as long as m: Release unmaps both.
func (m *Buffer) View(b []byte, off, end, before, after int) ([]byte, bool) {
	if m == nil || off < 0 || end > len(b) || off >= end || before < 0 || after < 0 {
		return nil, false
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(off)
	n := uintptr(end - off)
	if addr < m.base || addr+n > m.base+uintptr(len(m.buf)) {
		return nil, false
	}
	runAt := int64(addr - m.base) // the run's offset in the memfd
	from := runAt - int64(before)
	if from < 0 || runAt+int64(n)+int64(after) > int64(len(m.buf)) {
		return nil, false
	}
	page := int64(os.Getpagesize())
	mapFrom := from &^ (page - 1)
	mapTo := (runAt + int64(n) + int64(after) + page - 1) &^ (page - 1)
	// Read-only and populated: a writable private mapping would be
	// populated by write faults, a copy of every page. Only the pages of
	// the head and the tail become writable, and copied when written.
	w, err := unix.Mmap(m.fd, mapFrom, int(mapTo-mapFrom), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		return nil, false
	}
	at := int(from - mapFrom)
	headEnd := (int64(at+before) + page - 1) &^ (page - 1)
	tailFrom := int64(at+before+int(n)) &^ (page - 1)
	for _, r := range [][2]int64{{0, headEnd}, {tailFrom, int64(len(w))}} {
		if r[1] > r[0] && unix.Mprotect(w[r[0]:r[1]], unix.PROT_READ|unix.PROT_WRITE) != nil {
			unix.Munmap(w)
			return nil, false
		}
	}
	m.mu.Lock()
	m.views = append(m.views, w)
	m.mu.Unlock()
	return w[at : at+before+int(n)+after : at+before+int(n)+after], true
}

// Release unmaps m's bytes and every view of them, and closes its
// memfd; none of them may be used after.
func (m *Buffer) Release() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, v := range m.views {
		errs = append(errs, unix.Munmap(v))
	}
	m.views = nil
	errs = append(errs, unix.Munmap(m.buf), unix.Close(m.fd))
	return errors.Join(errs...)
}
