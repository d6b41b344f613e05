//go:build unix

package upstream

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// stderrPipe connects cmd's stderr to a pipe whose read end it returns,
// read with blocking reads rather than through the runtime's poller.
// drainStderr reads an upstream's stderr in batches, sleeping between
// reads; a pipe in the poller (as exec.Cmd.StderrPipe makes) still wakes
// the poller's thread on every write the upstream makes while nobody
// reads, which for a server that logs each message (the go-sdk examples)
// is a thread wake-up or two per call on the hop (BENCHMARKS.md, "The
// stdio hop against a bare relay"). A blocking
// read wakes a thread only when it waits for data, once per batch.
// closeChild closes the write end; call it once cmd has started (or
// failed to).
func stderrPipe(cmd *exec.Cmd) (r io.ReadCloser, closeChild func(), err error) {
	var p [2]int
	// as os.Pipe does where pipe2 is missing: no fork between the pipe
	// and marking it close-on-exec
	syscall.ForkLock.RLock()
	err = syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	// os.NewFile keeps a blocking descriptor out of the poller.
	rf := os.NewFile(uintptr(p[0]), "|0")
	wf := os.NewFile(uintptr(p[1]), "|1")
	cmd.Stderr = wf
	return rf, func() { _ = wf.Close() }, nil
}
