//go:build !unix

package upstream

import (
	"io"
	"os/exec"
)

// stderrPipe is exec.Cmd.StderrPipe where there is no blocking pipe of
// our own (see stderr_pipe_unix.go).
func stderrPipe(cmd *exec.Cmd) (r io.ReadCloser, closeChild func(), err error) {
	r, err = cmd.StderrPipe()
	return r, func() {}, err
}
