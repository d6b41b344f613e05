//go:build !linux

package memfdbuf

import "os"

// Buffer is never made here.
type Buffer struct{}

// ReadFile returns ErrUnsupported: there are no memfds here.
func ReadFile(*os.File, int64) (*Buffer, error) { return nil, ErrUnsupported }

// Bytes is nil: ReadFile returns no buffer.
func (*Buffer) Bytes() []byte { return nil }

// View reports false: ReadFile returns no buffer to view.
func (*Buffer) View([]byte, int, int, int, int) ([]byte, bool) { return nil, false }

// Release does nothing: ReadFile returns no buffer.
func (*Buffer) Release() error { return nil }
