//go:build unix

package jsonrpc

import (
	"errors"
	"io"
	"syscall"
)

// nonBlocking returns w's descriptor when w has one in non-blocking mode
// (os.Pipe's ends, in the runtime's poller), else nil: a write through a
// blocking descriptor could wait.
func nonBlocking(w io.Writer) syscall.RawConn {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	nb := false
	cerr := rc.Control(func(fd uintptr) {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nb = errno == 0 && flags&syscall.O_NONBLOCK != 0
	})
	if cerr != nil || !nb {
		return nil
	}
	return rc
}

// writeNow writes what the peer takes of b without waiting: n < len(b)
// with a nil error when the pipe is full.
func writeNow(rc syscall.RawConn, b []byte) (n int, err error) {
	cerr := rc.Write(func(fd uintptr) bool {
		for {
			n, err = syscall.Write(int(fd), b)
			if !errors.Is(err, syscall.EINTR) {
				return true // one attempt: never wait for the peer
			}
		}
	})
	if n < 0 {
		n = 0
	}
	if errors.Is(err, syscall.EAGAIN) {
		err = nil
	}
	if err == nil {
		err = cerr
	}
	return n, err
}
