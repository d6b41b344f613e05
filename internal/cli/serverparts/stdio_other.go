//go:build !unix

package serverparts

import (
	"io"
	"os"
)

// pollableStdin reads f as it is here (see stdin_unix.go).
func pollableStdin(f *os.File) (io.Reader, func()) { return f, func() {} }
