//go:build unix

package jsonrpc

import (
	"io"
	"syscall"
)

// nonBlocking returns f's descriptor when f has one in non-blocking mode
// (os.Pipe's ends, in the runtime's poller), else nil: a write through a
// blocking descriptor could wait.
func nonBlocking(f any) syscall.RawConn {
	sc, ok := f.(syscall.Conn)
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
// with a nil error when the pipe is full. writeAll writes all of b,
// waiting in the poller while the peer takes no more. Only the flusher
// calls them.
func (l *LineWriter) writeNow(b []byte) (n int, err error) {
	err = l.rawWrite(b, false)
	return l.rawN, err
}

func (l *LineWriter) writeAll(b []byte) error { return l.rawWrite(b, true) }

func (l *LineWriter) rawWrite(b []byte, wait bool) error {
	if l.rawFn == nil { // made once: a closure per write would allocate
		l.rawFn = func(fd uintptr) bool {
			for l.rawN < len(l.rawBuf) {
				n, errno := rawWrite(fd, l.rawBuf[l.rawN:])
				switch errno {
				case 0:
					l.rawN += n
				case syscall.EINTR:
				case syscall.EAGAIN:
					return !l.rawWait // false: wait until it can write
				default:
					l.rawErr = errno
					return true
				}
			}
			return true
		}
	}
	l.rawBuf, l.rawN, l.rawErr, l.rawWait = b, 0, nil, wait
	err := l.raw.Write(l.rawFn)
	l.rawBuf = nil
	if err == nil {
		err = l.rawErr
	}
	return err
}

// pipeReader reads a non-blocking descriptor: raw reads, and waits in
// the poller while there is nothing to read.
type pipeReader struct {
	rc   syscall.RawConn
	read func(fd uintptr) bool // made once: a closure per Read would allocate
	p    []byte
	n    int
	err  error
}

// NewPipeReader returns a reader of r that reads with raw system calls
// and waits in the runtime's poller, where r is a non-blocking descriptor
// (os.Pipe's ends, a piped stdin made non-blocking); r itself otherwise.
func NewPipeReader(r io.Reader) io.Reader {
	rc := nonBlocking(r)
	if rc == nil {
		return r
	}
	pr := &pipeReader{rc: rc}
	pr.read = func(fd uintptr) bool {
		for {
			n, errno := rawRead(fd, pr.p)
			switch {
			case errno == syscall.EINTR:
				continue
			case errno == syscall.EAGAIN:
				return false // wait until there is something to read
			case errno != 0:
				pr.n, pr.err = 0, errno
			case n == 0:
				pr.n, pr.err = 0, io.EOF
			default:
				pr.n, pr.err = n, nil
			}
			return true
		}
	}
	return pr
}

func (r *pipeReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	if err := r.rc.Read(r.read); err != nil {
		r.p = nil
		return 0, err
	}
	r.p = nil
	return r.n, r.err
}
