// Package memfdbuf reads a large input file into memory that later views
// can share page by page: the file's bytes go into a memfd (sendfile(2),
// a copy inside the kernel) mapped read-only, and View maps a private,
// copy-on-write window of those pages at a chosen alignment, so that a
// long run of the input can appear inside another buffer without being
// copied. mcpx transform reads its input so: a JSON-in-text payload (a
// text block whose text is a JSON document) is its text unescaped, and a
// 10 MiB base64 file inside it is the same bytes as in the input; a copy
// of them costs a pass over memory and a page fault per 4 KiB of a fresh
// buffer, which on a virtual machine is most of the time of the copy.
//
// Where memfds are missing (not Linux, or a kernel or sandbox without
// memfd_create or sendfile) ReadFile returns ErrUnsupported and View
// reports false: callers read and copy as before. A Buffer and its views
// live until its Release; whoever reads a file so hands the Buffer to
// whatever views it (engine.Call's Pages).
package memfdbuf

import "errors"

// ErrUnsupported is returned by ReadFile where it cannot share pages;
// the caller reads the file itself.
var ErrUnsupported = errors.New("memfdbuf: not supported here")
