//go:build unix

package serverparts

import (
	"io"
	"os"
	"syscall"
)

// pollableStdin returns a reader of f that waits for input in the
// runtime's poller, where f is a pipe or a socket (an MCP client's end of
// the stdio transport), and restore, which puts f back in blocking mode.
// A blocking read parks a thread in the kernel with its processor held:
// the scheduler's monitor then takes the processor back, and each
// request of the stdio hop costs thread wake-ups that a read through the
// poller, on the thread that also reads the upstream, does not (issue
// 18). Terminals and files are read as they are.
func pollableStdin(f *os.File) (in io.Reader, restore func()) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return f, func() {}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return f, func() {}
	}
	// A descriptor of its own (the flag is the open file's, which f
	// shares), for the poller to own and this function to close.
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return f, func() {}
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return f, func() {}
	}
	nf := os.NewFile(uintptr(fd), f.Name()) // non-blocking: in the poller
	return nf, func() {
		_ = syscall.SetNonblock(fd, false)
		_ = nf.Close()
	}
}
