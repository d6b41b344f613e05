//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func nonblocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// TestPollable: a pipe's end is handed over as a non-blocking descriptor
// of its own (the poller's) and put back in blocking mode by restore; a
// file, and a pipe that stderr shares, are left as they are.
func TestPollable(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	r.Fd() // blocking, as a client's pipe arrives
	pf, restore := pollable(r, -1)
	if pf == r {
		t.Fatal("a pipe was not made pollable")
	}
	if !nonblocking(t, int(pf.Fd())) {
		t.Fatal("the pollable pipe blocks")
	}
	if _, err := w.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := pf.Read(buf); err != nil || string(buf[:n]) != "x\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	restore()
	if nonblocking(t, int(r.Fd())) {
		t.Fatal("restore left the pipe non-blocking")
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pf, restore := pollable(f, -1); pf != f {
		t.Fatal("a regular file was made pollable")
	} else {
		restore()
	}

	if pf, restore := pollable(w, int(w.Fd())); pf != w {
		t.Fatal("a pipe another descriptor shares was made pollable")
	} else {
		restore()
	}
}
