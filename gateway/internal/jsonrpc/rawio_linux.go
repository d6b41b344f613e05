//go:build linux

package jsonrpc

import (
	"syscall"
	"unsafe"
)

// The stdio hop reads and writes its pipes through the runtime's poller
// with raw system calls. Go's own reads and writes enter the scheduler's
// system-call state even on a descriptor that never blocks; where every
// processor is idle between two calls (the hop waits on its pipes), that
// entry wakes the scheduler's monitor thread, a thread wake-up per read
// and per write. A read or write of a non-blocking descriptor
// returns at once, so it need not.

func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), errno
}

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), errno
}
