//go:build !unix

package jsonrpc

import (
	"io"
	"syscall"
)

// nonBlocking finds no non-blocking descriptor here: TryWrite leaves the
// writing to a goroutine.
func nonBlocking(any) syscall.RawConn { return nil }

func (l *LineWriter) writeNow([]byte) (int, error) { return 0, nil }

func (l *LineWriter) writeAll([]byte) error { return nil }

// NewPipeReader returns r (see writer_unix.go).
func NewPipeReader(r io.Reader) io.Reader { return r }
