//go:build !linux

package memfdbuf

import "os"

// ReadFile returns ErrUnsupported: there are no memfds here.
func ReadFile(*os.File, int64) ([]byte, error) { return nil, ErrUnsupported }

// View reports false: ReadFile returns no buffer to view.
func View([]byte, int, int, int, int) ([]byte, bool) { return nil, false }

// Release does nothing: ReadFile returns no buffer.
func Release([]byte) error { return nil }
