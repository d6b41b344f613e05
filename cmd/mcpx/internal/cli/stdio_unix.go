//go:build unix

package cli

import (
	"os"
	"syscall"
)

// pollable returns a file of f's open file that the runtime's poller
// waits on, where f is a pipe or a socket (an MCP client's end of the
// stdio transport), and restore, which puts f back in blocking mode and
// closes that file; f itself otherwise (a terminal, a file). A blocking
// read parks a thread in the kernel with its processor held, which the
// scheduler's monitor then takes back; a blocking write enters the
// system-call state, which wakes the monitor where every processor is
// idle. Through the poller, reading, the upstream's answer and writing
// run on one thread, without those wake-ups. shared is
// another descriptor of the process that must not turn non-blocking
// with f (stderr, when stdout is the same pipe: its writes would fail
// instead of waiting); -1 for none.
func pollable(f *os.File, shared int) (*os.File, func()) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return f, func() {}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return f, func() {}
	}
	if shared >= 0 {
		var other syscall.Stat_t
		if err := syscall.Fstat(shared, &other); err != nil || (other.Dev == st.Dev && other.Ino == st.Ino) {
			return f, func() {}
		}
	}
	// A descriptor of its own (the flag is the open file's, which f
	// shares), for the poller to own and restore to close.
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
