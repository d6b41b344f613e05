package fsstore

import "os"

// OSFile returns the open blob file when the reader spans all of it (a
// Get without a range), else nil: an HTTP server then sends the file
// with sendfile instead of copying it through user space. The file
// belongs to the reader: closing the reader closes it.
func (b *blobReader) OSFile() *os.File {
	_, off, n := b.Outer()
	if off != 0 {
		return nil
	}
	if fi, err := b.f.Stat(); err != nil || fi.Size() != n {
		return nil
	}
	return b.f
}
